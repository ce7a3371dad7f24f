/// What a capture job should do: its kind, when it starts and a label for people.
///
/// Durations are nanoseconds (the monotonic clock's unit); instants that must survive a
/// restart (`startAtWallMillis`, `until`) are wall-clock milliseconds since 1970-01-01 UTC.
public struct JobSpec: Sendable, Equatable, Codable {
    /// The shape of the job.
    public enum Kind: Sendable, Equatable, Codable {
        /// One shot, `delayNanoseconds` after the start.
        case delayed(delayNanoseconds: UInt64)
        /// Shot k at start + k × `everyNanoseconds`, until `end`.
        case interval(everyNanoseconds: UInt64, end: IntervalEnd)
        /// `count` shots, one per camera frame, from the start.
        case burst(count: Int)
    }

    /// When an interval job stops.
    public enum IntervalEnd: Sendable, Equatable, Codable {
        /// After `n` shots.
        case count(Int)
        /// Before this wall time (a shot due exactly then is not taken).
        case until(wallMillis: Int64)
        /// Before start + this many nanoseconds (a shot due exactly then is not taken).
        case duration(nanoseconds: UInt64)
        /// Only when cancelled.
        case unbounded
    }

    /// The shape of the job.
    public var kind: Kind
    /// When the job starts, in wall milliseconds; nil starts it when it is created.
    public var startAtWallMillis: Int64?
    /// A free-form name shown beside the job.
    public var label: String?

    /// A spec from its parts.
    public init(kind: Kind, startAtWallMillis: Int64? = nil, label: String? = nil) {
        self.kind = kind
        self.startAtWallMillis = startAtWallMillis
        self.label = label
    }
}
