/// One capture job as the catalog stores it: the spec as JSON, its state and its counts.
public struct JobRecord: Equatable, Sendable {
    /// Assigned by the catalog, strictly increasing, never reused.
    public var id: Int64
    /// The job spec's JSON, as the jobs module encodes it.
    public var specJSON: String
    /// A free-form name shown beside the job.
    public var label: String?
    /// The job state's raw value (scheduled, running, done, cancelled, failed).
    public var state: String
    /// When the job was created, in UTC milliseconds since 1970-01-01.
    public var createdAt: Int64
    /// The wall time (ms) the job's slots count from.
    public var startedAt: Int64
    /// Shots taken and stored.
    public var taken: Int
    /// Shots missed or failed.
    public var missed: Int
    /// Why the most recent failed shot failed.
    public var lastFailure: String?
    /// The kind of that failure, as the jobs module names it (`camera_unavailable`, ...).
    public var lastFailureKind: String?
    /// When the job ended, or nil while it has not.
    public var finishedAt: Int64?

    public init(
        id: Int64, specJSON: String, label: String?, state: String, createdAt: Int64, startedAt: Int64,
        taken: Int = 0, missed: Int = 0, lastFailure: String? = nil, lastFailureKind: String? = nil,
        finishedAt: Int64? = nil
    ) {
        self.id = id
        self.specJSON = specJSON
        self.label = label
        self.state = state
        self.createdAt = createdAt
        self.startedAt = startedAt
        self.taken = taken
        self.missed = missed
        self.lastFailure = lastFailure
        self.lastFailureKind = lastFailureKind
        self.finishedAt = finishedAt
    }
}
