import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A structured logger in the swift-log shape: a value type with a label and
/// metadata, messages built only when the level is enabled, one line per event
/// on stderr as `time level label: message key=value ...`.
public struct Logger: Sendable {
    /// Severity, lowest first.
    public enum Level: String, Sendable, CaseIterable, Comparable {
        case trace, debug, info, notice, warning, error, critical

        private var rank: Int { Self.allCases.firstIndex(of: self)! }
        public static func < (lhs: Level, rhs: Level) -> Bool { lhs.rank < rhs.rank }
    }

    /// Where log lines go; tests swap in a recorder.
    public protocol Sink: Sendable {
        /// Writes one line (without its newline).
        func write(_ line: String)
        /// Writes complete lines, each ending in a newline, as UTF-8: a batch from a thread that
        /// logs often (the access log), so that it costs one system call, not one a line.
        func write(lines: [UInt8])
    }

    /// The module or component, such as `shutter.http`.
    public let label: String
    /// Events below this level are dropped before their message is built.
    public var logLevel: Level
    /// Key-value pairs attached to every line from this logger.
    public var metadata: [String: String]
    /// Text or JSON, with or without journald priorities.
    public let style: LogStyle
    private let sink: any Sink

    public init(
        label: String, level: Level = .info, sink: any Sink = StandardErrorSink.shared,
        style: LogStyle = LogStyle()
    ) {
        self.label = label
        self.logLevel = level
        self.metadata = [:]
        self.sink = sink
        self.style = style
    }

    /// A copy with `value` attached under `key`.
    public func with(_ key: String, _ value: String) -> Logger {
        var copy = self
        copy.metadata[key] = value
        return copy
    }

    public func log(
        _ level: Level, _ message: @autoclosure () -> String,
        _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        guard level >= logLevel else { return }
        var line: [UInt8] = []
        LogLine.appendStart(to: &line, style: style, level: level)
        line += LogLine.timestamp(millisecondsSince1970: SystemClock().wallMillisecondsNow())
        LogLine.appendHead(to: &line, style: style, level: level, label: label, message: message())
        let extra = metadata()
        for (key, value) in self.metadata.merging(extra, uniquingKeysWith: { $1 }).sorted(by: {
            $0.key < $1.key
        }) {
            LogLine.appendField(to: &line, style: style, key: key, value: value)
        }
        LogLine.appendEnd(to: &line, style: style)
        sink.write(String(decoding: line, as: UTF8.self))
    }

    /// Whether events at `level` are written.
    public func isEnabled(_ level: Level) -> Bool { level >= logLevel }

    /// Hands complete lines, each ending in a newline, to the sink in one piece.
    public func write(lines: [UInt8]) {
        sink.write(lines: lines)
    }

    public func trace(
        _ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        log(.trace, message(), metadata())
    }
    public func debug(
        _ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        log(.debug, message(), metadata())
    }
    public func info(
        _ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        log(.info, message(), metadata())
    }
    public func notice(
        _ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        log(.notice, message(), metadata())
    }
    public func warning(
        _ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        log(.warning, message(), metadata())
    }
    public func error(
        _ message: @autoclosure () -> String, _ metadata: @autoclosure () -> [String: String] = [:]
    ) {
        log(.error, message(), metadata())
    }
}

extension Logger.Sink {
    /// Splits the batch and writes its lines one by one.
    public func write(lines: [UInt8]) {
        for line in lines.split(separator: UInt8(ascii: "\n")) {
            write(String(decoding: line, as: UTF8.self))
        }
    }
}

/// Writes each line, or each batch of lines, to stderr with one writer at a time, so lines from
/// threads never interleave.
///
/// The lock matters for batches: the kernel writes at most `PIPE_BUF` (4 KiB) to a pipe at once
/// atomically, and the access log's batches are larger, so without it another thread's line
/// could land inside one. A stderr left non-blocking by whoever started the daemon is waited on
/// (up to a second at a time) rather than having the rest of a batch dropped at once.
public final class StandardErrorSink: Logger.Sink {
    public static let shared = StandardErrorSink()
    private let writer = LockedValue<Void>(())

    public func write(_ line: String) {
        write(lines: Array((line + "\n").utf8))
    }

    public func write(lines: [UInt8]) {
        writer.withLock { _ in
            lines.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let n = Glibc.write(2, buffer.baseAddress! + offset, buffer.count - offset)
                    if n > 0 {
                        offset += n
                        continue
                    }
                    guard n < 0 else { return }
                    switch errno {
                    case EINTR: continue
                    case EAGAIN:
                        var entry = pollfd(fd: 2, events: Int16(POLLOUT), revents: 0)
                        // Nobody reading for a second: drop the rest rather than hold the loop.
                        guard poll(&entry, 1, 1000) > 0 else { return }
                    default: return
                    }
                }
            }
        }
    }
}
