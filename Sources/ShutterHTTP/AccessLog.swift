import ShutterSystem

/// The access log: one line per answered request, in the logger's format, written in batches.
///
/// Lines are built as bytes into one buffer and leave in one `write` when the event loop has
/// handled its events (`flush`), or when the buffer is full. Building each line through the
/// logger (a dictionary, a sort, string interpolation) and writing it alone cost a fifth of the
/// media throughput with the log on, which is the default (`benchmarks/README.md`).
///
/// Owned by the server's loop thread.
final class AccessLog {
    /// A field of the line: the logger's own metadata, or one of the request's.
    private enum Field {
        case fixed(key: String, value: String)
        case request(RequestField)
    }

    /// The request's fields, named as in the line.
    private enum RequestField: String, CaseIterable {
        case bytes
        case durationMilliseconds = "duration_ms"
        case method
        case requestID = "request_id"
        case status, target
    }

    /// A batch larger than this is written at once rather than at the end of the loop's turn.
    static let flushThreshold = 64 * 1024

    private let logger: Logger
    private let clock: any Clock
    /// Every field in key order, as `Logger` sorts them (a request field wins over metadata of
    /// the same name, as an event's metadata does).
    private let fields: [Field]
    private var buffer: [UInt8] = []
    private var timestamps = LogTimestampCache()

    init(logger: Logger, clock: any Clock) {
        self.logger = logger
        self.clock = clock
        let requestKeys = Set(RequestField.allCases.map(\.rawValue))
        let fixed = logger.metadata.filter { !requestKeys.contains($0.key) }.map {
            Field.fixed(key: $0.key, value: $0.value)
        }
        fields = (fixed + RequestField.allCases.map(Field.request)).sorted { Self.key($0) < Self.key($1) }
        buffer.reserveCapacity(Self.flushThreshold + 1024)
    }

    private static func key(_ field: Field) -> String {
        switch field {
        case .fixed(let key, _): key
        case .request(let field): field.rawValue
        }
    }

    /// Adds the line for a request answered now.
    func record(
        requestID: String, method: HTTPMethod, target: String, status: Int, bytes: Int,
        startedAt: MonotonicInstant
    ) {
        guard logger.isEnabled(.info) else { return }
        let elapsed = clock.monotonicNow().nanoseconds(since: startedAt)
        let style = logger.style
        LogLine.appendStart(to: &buffer, style: style, level: .info)
        timestamps.append(millisecondsSince1970: clock.wallMillisecondsNow(), to: &buffer)
        LogLine.appendHead(to: &buffer, style: style, level: .info, label: logger.label, message: "request")
        for field in fields {
            switch field {
            case .fixed(let key, let value):
                LogLine.appendField(to: &buffer, style: style, key: key, value: value)
            case .request(.bytes):
                LogLine.appendField(to: &buffer, style: style, key: "bytes", value: String(bytes))
            case .request(.durationMilliseconds):
                LogLine.appendField(
                    to: &buffer, style: style, key: "duration_ms",
                    value: Timestamp.thousandths(elapsed / 1000))
            case .request(.method):
                LogLine.appendField(to: &buffer, style: style, key: "method", value: method.rawValue)
            case .request(.requestID):
                LogLine.appendField(to: &buffer, style: style, key: "request_id", value: requestID)
            case .request(.status):
                LogLine.appendField(to: &buffer, style: style, key: "status", value: String(status))
            case .request(.target):
                LogLine.appendField(to: &buffer, style: style, key: "target", value: target)
            }
        }
        LogLine.appendEnd(to: &buffer, style: style)
        buffer.append(UInt8(ascii: "\n"))
        if buffer.count >= Self.flushThreshold { flush() }
    }

    /// Writes the lines gathered so far.
    func flush() {
        guard !buffer.isEmpty else { return }
        logger.write(lines: buffer)
        buffer.removeAll(keepingCapacity: true)
    }
}
