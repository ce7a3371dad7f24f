/// Why a shot failed: a kind a program can act on, beside a sentence for people.
public struct ShotFailure: Sendable, Equatable {
    /// What kind of failure it was; stored with the job, so it survives a restart.
    public enum Kind: String, Sendable, CaseIterable {
        /// The camera was gone, stalled or stopping.
        case cameraUnavailable = "camera_unavailable"
        /// The disk was full, or the picture would have left less free than the configured floor.
        case storageFull = "storage_full"
        /// Anything else (a database or file error).
        case failed
    }

    public var kind: Kind
    /// What went wrong, in words.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
}
