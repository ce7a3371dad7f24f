/// What a message from the broker may ask of the daemon: take a picture, start or stop the
/// interval job; and what the Home Assistant sensors show. The daemon implements it with its
/// capture, job and catalog services, so this module needs neither them nor the HTTP API.
public protocol CameraRemote: Sendable {
    /// Takes a picture now (or, with a delay, schedules a delayed job) labelled `label`;
    /// returns the stored picture's id, or nil for a delayed one.
    func snap(label: String?, delaySeconds: Double?) async throws -> Int64?
    /// Starts the interval job (a picture every `everySeconds`) unless one started from here runs.
    func startIntervalJob(everySeconds: Double) async throws
    /// Cancels the interval jobs started from here.
    func stopIntervalJob() async throws
    /// Whether an interval job started from here is scheduled or running.
    func intervalJobRunning() async throws -> Bool
    /// How many pictures are stored and when the newest was taken.
    func libraryState() async throws -> MQTTLibraryState
}

/// The library as the Home Assistant sensors show it.
public struct MQTTLibraryState: Sendable, Equatable {
    public var pictures: Int
    /// ISO 8601 (`2026-12-02T04:10:00.123Z`), nil with no picture.
    public var lastPictureAt: String?

    public init(pictures: Int, lastPictureAt: String?) {
        self.pictures = pictures
        self.lastPictureAt = lastPictureAt
    }
}
