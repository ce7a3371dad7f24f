/// Where a job is in its life; the raw values are what the API and the database show.
public enum JobState: String, Sendable, Equatable, Codable {
    /// Waiting for its first shot to fall due.
    case scheduled
    /// Taking shots.
    case running
    /// Ended with at least one shot taken.
    case done
    /// Stopped by a request before it ended.
    case cancelled
    /// Ended without taking any shot (every one missed or failed).
    case failed

    /// Whether the job has ended and will take no more shots.
    public var isFinal: Bool { self == .done || self == .cancelled || self == .failed }
}
