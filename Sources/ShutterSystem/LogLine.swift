#if canImport(Glibc)
    import Glibc
#endif

/// How log lines are written: `key=value` text or one JSON object a line, and whether each
/// starts with its syslog priority (`<6>`) for journald.
public struct LogStyle: Sendable, Equatable {
    public enum Format: String, Sendable, CaseIterable {
        /// `2026-11-30T04:10:00.123Z info label: message key=value`
        case text
        /// `{"ts":"2026-11-30T04:10:00.123Z","level":"info","label":"…","msg":"…","key":"value"}`
        case json
    }

    public var format: Format
    /// Prefix each line with `<N>`, its syslog priority (sd-daemon(3)), so that journald files
    /// it at the right level and `journalctl -p warning` works.
    public var journalPriorities: Bool

    public init(format: Format = .text, journalPriorities: Bool = false) {
        self.format = format
        self.journalPriorities = journalPriorities
    }

    /// Whether stderr is the journal stream systemd set up (`$JOURNAL_STREAM` names its device
    /// and inode, systemd.exec(5)): only then are priorities prefixed, not when stderr was
    /// redirected elsewhere by the service or its user.
    public static func stderrIsJournal(environment: [String: String]) -> Bool {
        guard let stream = environment["JOURNAL_STREAM"] else { return false }
        let parts = stream.split(separator: ":")
        guard parts.count == 2, let device = UInt64(parts[0]), let inode = UInt64(parts[1]) else {
            return false
        }
        var info = stat()
        guard fstat(2, &info) == 0 else { return false }
        return UInt64(info.st_dev) == device && UInt64(info.st_ino) == inode
    }
}

/// Log lines as UTF-8 bytes, in the one shape every line has, in the chosen `LogStyle`:
/// `2026-11-30T04:10:00.123Z info label: message key=value key="a value"`, keys sorted, or the
/// same as a JSON object.
///
/// Written into a caller's buffer, so a line costs no allocation beyond the buffer's growth:
/// the access log builds one per request on the event loop. A line is `appendStart`, the
/// timestamp, `appendHead`, `appendField` for each field, `appendEnd`.
public enum LogLine {
    /// Appends what comes before the timestamp: the priority, and the JSON object's opening.
    public static func appendStart(to bytes: inout [UInt8], style: LogStyle, level: Logger.Level) {
        if style.journalPriorities {
            bytes.append(UInt8(ascii: "<"))
            bytes.append(UInt8(ascii: "0") + priority(level))
            bytes.append(UInt8(ascii: ">"))
        }
        if style.format == .json { bytes += #"{"ts":""#.utf8 }
    }

    /// Appends what follows the timestamp: the level, label and message.
    public static func appendHead(
        to bytes: inout [UInt8], style: LogStyle, level: Logger.Level, label: String, message: String
    ) {
        switch style.format {
        case .text:
            bytes.append(UInt8(ascii: " "))
            bytes += level.rawValue.utf8
            bytes.append(UInt8(ascii: " "))
            bytes += label.utf8
            bytes += ": ".utf8
            bytes += message.utf8
        case .json:
            bytes += #"","level":""#.utf8
            bytes += level.rawValue.utf8
            bytes += #"","label":"#.utf8
            JSONBytes.appendString(label, to: &bytes)
            bytes += #","msg":"#.utf8
            JSONBytes.appendString(message, to: &bytes)
        }
    }

    /// Appends one field: ` key=value` (quoting a value that is empty or holds a space, `"`,
    /// `=` or a control character), or `,"key":"value"`.
    ///
    /// In a quoted value `"` and `\` are escaped, and control characters are written as JSON
    /// writes them (`\n`, `\u001b`): values come from clients too (a decoded path, a `Host`),
    /// and a raw newline would let one write a line of its own that reads as the daemon's.
    public static func appendField(to bytes: inout [UInt8], style: LogStyle, key: String, value: String) {
        appendKey(to: &bytes, style: style, key: key)
        appendValue(to: &bytes, style: style, value: value)
    }

    /// Appends what comes before a field's value: ` key=`, or `,"key":`. A writer of many lines
    /// with the same keys (the access log) makes these bytes once.
    public static func appendKey(to bytes: inout [UInt8], style: LogStyle, key: String) {
        if style.format == .json {
            bytes.append(UInt8(ascii: ","))
            JSONBytes.appendString(key, to: &bytes)
            bytes.append(UInt8(ascii: ":"))
            return
        }
        bytes.append(UInt8(ascii: " "))
        bytes += key.utf8
        bytes.append(UInt8(ascii: "="))
    }

    /// Appends a field's value after its key, quoted and escaped as `appendField` says.
    public static func appendValue(to bytes: inout [UInt8], style: LogStyle, value: String) {
        if style.format == .json {
            JSONBytes.appendString(value, to: &bytes)
            return
        }
        // A native string's bytes are scanned and copied in place (the access log writes a
        // target per request); a bridged one goes through its UTF-8 view.
        let written =
            value.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
                guard !utf8.isEmpty, !utf8.contains(where: needsQuotes) else { return false }
                bytes.append(contentsOf: utf8)
                return true
            }
            ?? {
                let utf8 = value.utf8
                guard !utf8.isEmpty, !utf8.contains(where: needsQuotes) else { return false }
                bytes += utf8
                return true
            }()
        if !written { JSONBytes.appendString(value, to: &bytes) }
    }

    /// Whether a text value holding `byte` is quoted: a space, `"` or `=` would make it read as
    /// more than one value, a control character as more than one line.
    @inline(__always)
    private static func needsQuotes(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "=") || byte < 0x20
            || byte == 0x7F
    }

    /// Appends `value` in decimal as a field's value, the same bytes as `appendValue` of
    /// `String(value)`, without making the string: digits need no quotes in text, and JSON
    /// values are strings.
    public static func appendValue(to bytes: inout [UInt8], style: LogStyle, integer value: Int) {
        if style.format == .json { bytes.append(UInt8(ascii: "\"")) }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        JSONBytes.appendDecimal(UInt64(value.magnitude), to: &bytes)
        if style.format == .json { bytes.append(UInt8(ascii: "\"")) }
    }

    /// Appends `value` thousandths with three decimal places as a field's value (`1234` is
    /// `1.234`), the same bytes as `appendValue` of `Timestamp.thousandths(value)`.
    public static func appendValue(to bytes: inout [UInt8], style: LogStyle, thousandths value: UInt64) {
        if style.format == .json { bytes.append(UInt8(ascii: "\"")) }
        JSONBytes.appendDecimal(value / 1000, to: &bytes)
        bytes.append(UInt8(ascii: "."))
        JSONBytes.appendDecimal(value % 1000, to: &bytes, minimumDigits: 3)
        if style.format == .json { bytes.append(UInt8(ascii: "\"")) }
    }

    /// Ends the line (without its newline).
    public static func appendEnd(to bytes: inout [UInt8], style: LogStyle) {
        if style.format == .json { bytes.append(UInt8(ascii: "}")) }
    }

    /// `2026-11-30T04:10:00.123Z` for `millisecondsSince1970`, as bytes.
    public static func timestamp(millisecondsSince1970 milliseconds: Int64) -> [UInt8] {
        Array(Timestamp.iso8601(millisecondsSince1970: milliseconds).utf8)
    }

    /// The syslog priority of `level` (syslog(3)): debug 7 … critical 2.
    static func priority(_ level: Logger.Level) -> UInt8 {
        switch level {
        case .trace, .debug: 7
        case .info: 6
        case .notice: 5
        case .warning: 4
        case .error: 3
        case .critical: 2
        }
    }
}

/// The ISO 8601 time of log lines, formatted once a second and completed with the milliseconds,
/// for a thread that writes many lines a second (the event loop's access log).
public struct LogTimestampCache {
    private var second: Int64 = .min
    /// `2026-11-30T04:10:00.` for `second`.
    private var prefix: [UInt8] = []

    public init() {}

    /// Appends the time `milliseconds` (since 1970, UTC) to `bytes`.
    public mutating func append(millisecondsSince1970 milliseconds: Int64, to bytes: inout [UInt8]) {
        let (second, millisecond) = milliseconds.quotientAndRemainder(dividingBy: 1000)
        if second != self.second || millisecond < 0 {
            // Whole seconds only; a time before 1970 (never seen) is formatted in full.
            let full = LogLine.timestamp(millisecondsSince1970: milliseconds)
            guard millisecond >= 0 else {
                bytes += full
                return
            }
            self.second = second
            prefix = Array(full.prefix(full.count - 4))
        }
        bytes += prefix
        bytes.append(UInt8(ascii: "0") + UInt8(millisecond / 100))
        bytes.append(UInt8(ascii: "0") + UInt8(millisecond / 10 % 10))
        bytes.append(UInt8(ascii: "0") + UInt8(millisecond % 10))
        bytes.append(UInt8(ascii: "Z"))
    }
}
