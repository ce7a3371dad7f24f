/// What the owner of a `JobSchedule` must do after calling `advance(now:)`.
public enum JobAction: Sendable, Equatable {
    /// Take shot `index` now and report it with `shotSucceeded` or `shotFailed`.
    case takeShot(index: Int)
    /// `count` shots could not be taken on time and were skipped; record them, do not make them up.
    case missedShots(count: Int)
    /// The job ended in this state; persist it and stop driving the schedule.
    case finished(JobState)
}
