import ShutterSystem

/// The access log: one line per answered request, in the logger's format, written in batches.
///
/// Lines are built as bytes into one buffer and handed to the logger's sink (the log writer
/// thread) once the buffer holds `batchBytes`, or on the loop's next tick (`flush`), so the
/// loop takes the sink's lock and wakes the writer a few times a second at most rather than once
/// a turn: under wrk that was half of the log's cost, the writer's wake-ups and small writes
/// included (`benchmarks/README.md`).
/// A line therefore reaches stderr at most a tick (250 ms) after its request was answered.
///
/// Everything in a line but the time and the request's own values (the level, label, message,
/// the logger's metadata, every key) is the same in every line, so it is made into bytes once.
///
/// Owned by the server's loop thread.
final class AccessLog {
    /// A piece of the line after its time: bytes the same in every line, or a request's value.
    private enum Segment {
        case constant([UInt8])
        case value(RequestField)
    }

    /// The request's fields, named as in the line.
    private enum RequestField: String, CaseIterable {
        case bytes
        case durationMilliseconds = "duration_ms"
        case method
        case requestID = "request_id"
        case status, target
    }

    /// A batch this large is handed to the sink at once rather than on the next tick: about 200
    /// lines, a few times a second at the highest rates, and still one `write` for the writer.
    static let batchBytes = 32 * 1024

    private let logger: Logger
    /// Whether the logger writes `info` lines; its level is fixed, and the check is not free.
    private let enabled: Bool
    private let clock: any Clock
    private let style: LogStyle
    /// What precedes the time: the priority, the JSON object's opening.
    private let lineStart: [UInt8]
    /// What follows the time, the head and then every field in key order, as `Logger` sorts them
    /// (a request field wins over metadata of the same name, as an event's metadata does).
    private let segments: [Segment]
    private var buffer: [UInt8] = []
    private var timestamps = LogTimestampCache()

    init(logger: Logger, clock: any Clock) {
        self.logger = logger
        self.clock = clock
        enabled = logger.isEnabled(.info)
        style = logger.style
        var start: [UInt8] = []
        LogLine.appendStart(to: &start, style: style, level: .info)
        lineStart = start
        segments = Self.segments(logger: logger, style: style)
        buffer.reserveCapacity(Self.batchBytes + 4096)
    }

    private static func segments(logger: Logger, style: LogStyle) -> [Segment] {
        enum Field {
            case fixed(key: String, value: String)
            case request(RequestField)
            var key: String {
                switch self {
                case .fixed(let key, _): key
                case .request(let field): field.rawValue
                }
            }
        }
        let requestKeys = Set(RequestField.allCases.map(\.rawValue))
        let fixed = logger.metadata.filter { !requestKeys.contains($0.key) }.map {
            Field.fixed(key: $0.key, value: $0.value)
        }
        let fields = (fixed + RequestField.allCases.map(Field.request)).sorted { $0.key < $1.key }
        var segments: [Segment] = []
        var constant: [UInt8] = []
        LogLine.appendHead(to: &constant, style: style, level: .info, label: logger.label, message: "request")
        for field in fields {
            LogLine.appendKey(to: &constant, style: style, key: field.key)
            switch field {
            case .fixed(_, let value):
                LogLine.appendValue(to: &constant, style: style, value: value)
            case .request(let requestField):
                segments.append(.constant(constant))
                segments.append(.value(requestField))
                constant = []
            }
        }
        LogLine.appendEnd(to: &constant, style: style)
        constant.append(UInt8(ascii: "\n"))
        segments.append(.constant(constant))
        return segments
    }

    /// Adds the line for a request answered now.
    func record(
        requestID: String, method: HTTPMethod, target: String, status: Int, bytes: Int,
        startedAt: MonotonicInstant
    ) {
        guard enabled else { return }
        let elapsed = clock.monotonicNow().nanoseconds(since: startedAt)
        // Built in a local array taken from the buffer and put back: appends to a class's
        // property each pay a dynamic exclusivity check, which perf showed as a tenth of a line.
        var lines = buffer
        buffer = []
        lines += lineStart
        timestamps.append(millisecondsSince1970: clock.wallMillisecondsNow(), to: &lines)
        for segment in segments {
            switch segment {
            case .constant(let bytes):
                lines += bytes
            case .value(.bytes):
                LogLine.appendValue(to: &lines, style: style, integer: bytes)
            case .value(.durationMilliseconds):
                LogLine.appendValue(to: &lines, style: style, thousandths: elapsed / 1000)
            case .value(.method):
                LogLine.appendValue(to: &lines, style: style, value: method.rawValue)
            case .value(.requestID):
                LogLine.appendValue(to: &lines, style: style, value: requestID)
            case .value(.status):
                LogLine.appendValue(to: &lines, style: style, integer: status)
            case .value(.target):
                LogLine.appendValue(to: &lines, style: style, value: target)
            }
        }
        buffer = lines
        if buffer.count >= Self.batchBytes { flush() }
    }

    /// Hands the lines gathered so far to the sink: on every tick of the loop, and when the
    /// server has shut down.
    func flush() {
        guard !buffer.isEmpty else { return }
        logger.write(lines: buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}
