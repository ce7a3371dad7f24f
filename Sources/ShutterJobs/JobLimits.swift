/// The bounds a job spec must stay within; the defaults are what shutterd uses.
public struct JobLimits: Sendable, Equatable {
    /// The most shots one interval or burst job may ask for.
    public var maxCount: Int
    /// The most jobs that may be scheduled or running at once.
    public var maxActiveJobs: Int
    /// The longest accepted label, in UTF-8 bytes.
    public var maxLabelBytes: Int
    /// Whether an interval job may run until cancelled (no `count`, `until` or `duration`).
    public var allowsUnbounded: Bool

    /// Limits with shutterd's defaults unless given.
    public init(
        maxCount: Int = 10_000, maxActiveJobs: Int = 8, maxLabelBytes: Int = 200,
        allowsUnbounded: Bool = false
    ) {
        self.maxCount = maxCount
        self.maxActiveJobs = maxActiveJobs
        self.maxLabelBytes = maxLabelBytes
        self.allowsUnbounded = allowsUnbounded
    }

    /// Throws `.tooManyActiveJobs` if one more job would exceed `maxActiveJobs`.
    public func checkRoom(activeJobs: Int) throws(JobSpecError) {
        if activeJobs >= maxActiveJobs { throw .tooManyActiveJobs(limit: maxActiveJobs) }
    }
}
