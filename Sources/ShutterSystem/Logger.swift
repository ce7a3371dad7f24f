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
    /// The id of the HTTP request being handled, set by the server around each handler: every
    /// line logged on its behalf, in any module and on the catalog's thread too, carries it as
    /// `request_id`, like the request's access log line.
    @TaskLocal public static var requestID: String?
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
        var extra = metadata()
        if let requestID = Self.requestID, extra["request_id"] == nil { extra["request_id"] = requestID }
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

/// Writes log lines to stderr from a thread of its own, so that no thread that logs (the event
/// loop above all) ever waits for stderr.
///
/// A stderr that nobody reads (a pipe whose reader stopped, a journal that is behind) used to
/// block the event loop's `write`, and the daemon stopped answering anyone after a few hundred
/// requests. Lines now go into a queue of at most `capacity` bytes that the writer thread
/// drains with blocking writes; what does not fit is dropped and counted, and one line saying
/// how many were dropped is written as soon as stderr takes lines again. Lines are written
/// whole and in order; a batch (the access log's) is never split by another thread's line.
public final class StandardErrorSink: Logger.Sink, @unchecked Sendable {
    // @unchecked Sendable: `state` is only touched under its lock; `writer` is set once, under it.
    public static let shared = StandardErrorSink(descriptor: 2)

    /// The most bytes waiting for stderr before new lines are dropped.
    public static let defaultCapacity = 1 << 20

    private struct State {
        var style = LogStyle()
        var pending: [UInt8] = []
        var droppedLines = 0
        var writerStarted = false
        /// Bytes handed to `write` and not yet written, for `flush`.
        var inFlight = 0
    }

    private let descriptor: Int32
    private let capacity: Int
    private let state = LockedValue(State())
    private let wakeup = ThreadWakeup()
    private let drained = ThreadWakeup()

    /// A sink writing to `descriptor` (2 for stderr; tests use a pipe) with a queue of `capacity` bytes.
    public init(descriptor: Int32, capacity: Int = StandardErrorSink.defaultCapacity) {
        self.descriptor = descriptor
        self.capacity = capacity
    }

    public func write(_ line: String) {
        write(lines: Array((line + "\n").utf8))
    }

    public func write(lines: [UInt8]) {
        let (startWriter, wakeWriter) = state.withLock { state -> (Bool, Bool) in
            // The writer takes everything pending before it waits again, so only lines that
            // find the queue empty need to wake it; the others save a lock and a futex call.
            let wasEmpty = state.pending.isEmpty
            if state.pending.count + lines.count > capacity {
                state.droppedLines += lines.reduce(0) { $0 + ($1 == UInt8(ascii: "\n") ? 1 : 0) }
            } else {
                state.pending += lines
            }
            defer { state.writerStarted = true }
            return (!state.writerStarted, wasEmpty)
        }
        if startWriter { start() }
        if wakeWriter { wakeup.signal() }
    }

    /// The style of the lines this sink writes itself (the count of dropped lines).
    public var style: LogStyle {
        get { state.withLock { $0.style } }
        set { state.withLock { $0.style = newValue } }
    }

    /// Lines dropped so far because stderr was not taking them.
    public var droppedLines: Int { state.withLock { $0.droppedLines } }

    /// Waits until every queued line is written, or `seconds` pass (a stderr nobody reads must
    /// not hold the process's exit); returns whether everything was written.
    @discardableResult
    public func flush(seconds: Int = 1) -> Bool {
        let deadline = SystemClock().monotonicNow().advanced(by: UInt64(seconds) * 1_000_000_000)
        while true {
            let empty = state.withLock { $0.pending.isEmpty && $0.inFlight == 0 }
            if empty { return true }
            wakeup.signal()
            if !drained.wait(untilMonotonic: deadline) && SystemClock().monotonicNow() >= deadline {
                return state.withLock { $0.pending.isEmpty && $0.inFlight == 0 }
            }
        }
    }

    private func start() {
        do {
            let thread = try OSThread.spawn(name: "shutter-log") { [self] in run() }
            thread.detach()
        } catch {
            // No thread: write on the caller's thread rather than lose the lines.
            state.withLock { $0.writerStarted = false }
            let bytes = state.withLock { state -> [UInt8] in
                defer { state.pending.removeAll() }
                return state.pending
            }
            writeAll(bytes)
        }
    }

    private func run() {
        while true {
            _ = wakeup.wait(untilMonotonic: nil)
            while true {
                let (bytes, dropped) = state.withLock { state -> ([UInt8], Int) in
                    let bytes = state.pending
                    let dropped = state.droppedLines
                    state.pending.removeAll(keepingCapacity: true)
                    state.inFlight = bytes.count
                    return (bytes, dropped)
                }
                if bytes.isEmpty {
                    drained.signal()
                    break
                }
                writeAll(bytes)
                state.withLock { $0.inFlight = 0 }
                reportDropped(since: dropped)
            }
        }
    }

    /// The number of dropped lines last reported (the writer thread's own).
    private var reportedDropped = 0

    /// Says once how many lines were dropped since the last report, now that stderr takes lines.
    private func reportDropped(since dropped: Int) {
        guard dropped > reportedDropped else { return }
        let style = self.style
        var line: [UInt8] = []
        LogLine.appendStart(to: &line, style: style, level: .warning)
        line += LogLine.timestamp(millisecondsSince1970: SystemClock().wallMillisecondsNow())
        LogLine.appendHead(
            to: &line, style: style, level: .warning, label: "shutterd",
            message: "log lines dropped: stderr was not read")
        LogLine.appendField(to: &line, style: style, key: "dropped", value: String(dropped - reportedDropped))
        LogLine.appendEnd(to: &line, style: style)
        line.append(UInt8(ascii: "\n"))
        reportedDropped = dropped
        writeAll(line)
    }

    /// Writes all of `bytes`, waiting as long as stderr takes (this is the writer's own thread).
    private func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let n = Glibc.write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                if n > 0 {
                    offset += n
                    continue
                }
                guard n < 0 else { return }
                switch errno {
                case EINTR: continue
                case EAGAIN:
                    // A stderr left non-blocking by whoever started the daemon: wait for room.
                    var entry = pollfd(fd: descriptor, events: Int16(POLLOUT), revents: 0)
                    _ = poll(&entry, 1, 1000)
                default: return
                }
            }
        }
    }
}
