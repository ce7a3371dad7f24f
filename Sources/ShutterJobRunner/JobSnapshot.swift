import ShutterCatalog
import ShutterJobs

/// A job as the API shows it: the stored record, its spec, and when its next shot is due.
public struct JobSnapshot: Sendable {
    /// The stored job, with the live state and counts when the job is running.
    public var record: JobRecord
    /// The decoded spec, or nil if the stored JSON could not be read.
    public var spec: JobSpec?
    /// The wall time (ms) of the next shot, or nil when none is due (the job has ended).
    public var nextShotAtWall: Int64?

    /// Why the most recent failed shot failed, with its kind.
    public var lastFailure: ShotFailure? { record.lastShotFailure }
}

extension JobRecord {
    /// The stored last failure with its kind (`failed` for one stored before kinds were kept).
    var lastShotFailure: ShotFailure? {
        guard let message = lastFailure else { return nil }
        let kind = lastFailureKind.flatMap(ShotFailure.Kind.init(rawValue:)) ?? .failed
        return ShotFailure(kind, message)
    }
}
