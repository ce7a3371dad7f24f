import FoundationEssentials

/// A command taken from the broker: `…/snap/set` or `…/job/set`, parsed with no I/O.
public enum MQTTCommand: Sendable, Equatable {
    /// `{}`, an empty payload, or `{"label": "door", "delay": 5}`.
    case snap(label: String?, delaySeconds: Double?)
    /// `ON`, or `{"state": "ON", "every": 5}`.
    case startIntervalJob(everySeconds: Double)
    /// `OFF`, or `{"state": "OFF"}`.
    case stopIntervalJob

    /// What runs one at a time: a second of the same kind while one is in flight is refused.
    public enum Kind: Sendable, Hashable { case snap, job }

    public var kind: Kind {
        switch self {
        case .snap: .snap
        case .startIntervalJob, .stopIntervalJob: .job
        }
    }

    /// The most bytes a command's payload may have; longer ones are ignored unread.
    public static let maximumPayloadBytes = 1024
    /// The longest label, in UTF-8 bytes: the same bound as `POST /snap`'s.
    public static let maximumLabelBytes = 200
    /// The interval job's bounds, in seconds.
    public static let intervalRange: ClosedRange<Double> = 1...86_400
    /// The longest delay of a delayed snap, in seconds.
    public static let maximumDelaySeconds: Double = 3600

    /// The command `payload` on `topic` asks for; `defaultEverySeconds` is the interval of a
    /// plain `ON`. Throws with a sentence for the log.
    public static func parse(
        topic: String, payload: [UInt8], topics: MQTTTopics, defaultEverySeconds: Double
    ) throws(MQTTCommandError) -> MQTTCommand {
        guard payload.count <= maximumPayloadBytes else {
            throw MQTTCommandError("payload larger than \(maximumPayloadBytes) bytes")
        }
        let text = String(decoding: payload, as: UTF8.self).trimmingWhitespace()
        switch topic {
        case topics.snapCommand:
            if text.isEmpty || text == "{}" { return .snap(label: nil, delaySeconds: nil) }
            guard let options = try? JSONDecoder().decode(SnapPayload.self, from: Data(text.utf8)) else {
                throw MQTTCommandError(#"snap/set takes {} or {"label": text, "delay": seconds}"#)
            }
            if let label = options.label, label.utf8.count > maximumLabelBytes {
                throw MQTTCommandError("the label is longer than \(maximumLabelBytes) bytes")
            }
            if let delay = options.delay, !(0...maximumDelaySeconds).contains(delay) {
                throw MQTTCommandError("delay must be from 0 to \(Int(maximumDelaySeconds)) seconds")
            }
            let label = options.label?.isEmpty == true ? nil : options.label
            return .snap(label: label, delaySeconds: options.delay == 0 ? nil : options.delay)
        case topics.jobCommand:
            var state = text
            var every = defaultEverySeconds
            if text.hasPrefix("{") {
                guard let options = try? JSONDecoder().decode(JobPayload.self, from: Data(text.utf8)) else {
                    throw MQTTCommandError(#"job/set takes ON, OFF or {"state": "ON", "every": seconds}"#)
                }
                state = options.state
                every = options.every ?? defaultEverySeconds
            }
            switch state.uppercased() {
            case "ON":
                guard intervalRange.contains(every) else {
                    throw MQTTCommandError(
                        "every must be from \(Int(intervalRange.lowerBound)) to \(Int(intervalRange.upperBound)) seconds"
                    )
                }
                return .startIntervalJob(everySeconds: every)
            case "OFF":
                return .stopIntervalJob
            default:
                throw MQTTCommandError(#"job/set takes ON, OFF or {"state": "ON", "every": seconds}"#)
            }
        default:
            throw MQTTCommandError("not a command topic")
        }
    }

    private struct SnapPayload: Decodable {
        var label: String?
        var delay: Double?
    }

    private struct JobPayload: Decodable {
        var state: String
        var every: Double?
    }
}

/// Why a command from the broker was not carried out.
public struct MQTTCommandError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Admits commands from the broker one of each kind at a time, so a flood of messages runs at
/// most one snap and one job change, and counts what it refused.
public struct MQTTCommandGate: Sendable, Equatable {
    private var inFlight: Set<MQTTCommand.Kind> = []
    /// Commands refused since the last one admitted: the log says so once per flood.
    public private(set) var refusedInRow = 0
    /// Every command refused.
    public private(set) var refused: UInt64 = 0

    public init() {}

    /// Whether a command of `kind` may run now; if so it is in flight until `finish(kind)`.
    public mutating func admit(_ kind: MQTTCommand.Kind) -> Bool {
        guard inFlight.insert(kind).inserted else {
            refusedInRow += 1
            refused += 1
            return false
        }
        refusedInRow = 0
        return true
    }

    public mutating func finish(_ kind: MQTTCommand.Kind) {
        inFlight.remove(kind)
    }
}

extension String {
    fileprivate func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let first = scalars.firstIndex(where: { !$0.properties.isWhitespace }),
            let last = scalars.lastIndex(where: { !$0.properties.isWhitespace })
        else { return "" }
        return String(scalars[first...last])
    }
}
