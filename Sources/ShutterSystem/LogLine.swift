/// Log lines as UTF-8 bytes, in the one format every line has:
/// `2026-11-30T04:10:00.123Z info label: message key=value key="a value"`, keys sorted.
///
/// Written into a caller's buffer, so a line costs no allocation beyond the buffer's growth:
/// the access log builds one per request on the event loop.
public enum LogLine {
    /// Appends the time, level, label and message.
    public static func appendHead(
        to bytes: inout [UInt8], timestamp: [UInt8], level: Logger.Level, label: String, message: String
    ) {
        bytes += timestamp
        bytes.append(UInt8(ascii: " "))
        bytes += level.rawValue.utf8
        bytes.append(UInt8(ascii: " "))
        bytes += label.utf8
        bytes += ": ".utf8
        bytes += message.utf8
    }

    /// Appends ` key=value`, quoting a value that is empty or holds a space, `"` or `=`.
    public static func appendField(to bytes: inout [UInt8], key: String, value: String) {
        bytes.append(UInt8(ascii: " "))
        bytes += key.utf8
        bytes.append(UInt8(ascii: "="))
        let utf8 = value.utf8
        let needsQuotes =
            utf8.isEmpty
            || utf8.contains {
                $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "=")
            }
        guard needsQuotes else {
            bytes += utf8
            return
        }
        bytes.append(UInt8(ascii: "\""))
        for byte in utf8 {
            if byte == UInt8(ascii: "\"") { bytes.append(UInt8(ascii: "\\")) }
            bytes.append(byte)
        }
        bytes.append(UInt8(ascii: "\""))
    }

    /// `2026-11-30T04:10:00.123Z` for `millisecondsSince1970`, as bytes.
    public static func timestamp(millisecondsSince1970 milliseconds: Int64) -> [UInt8] {
        Array(Timestamp.iso8601(millisecondsSince1970: milliseconds).utf8)
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
