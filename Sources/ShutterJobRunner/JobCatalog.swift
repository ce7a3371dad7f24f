import ShutterCatalog

/// What `JobService` needs of the catalog: its jobs' rows and their pictures.
///
/// `MediaCatalog` is the one conformance in the daemon; tests put a catalog whose writes fail
/// in its place (`FailingJobCatalog` in ShutterTestSupport).
public protocol JobCatalog: Sendable {
    /// Every job that has not ended, oldest first.
    func unfinishedJobs() async throws -> [JobRecord]
    /// Stores a new job and returns it with its id.
    func createJob(specJSON: String, label: String?, state: String, createdAt: Int64, startedAt: Int64)
        async throws -> JobRecord
    /// Records a job's progress; `finishedAt` is set once. False if there is no such job.
    @discardableResult
    func updateJob(
        id: Int64, state: String, taken: Int, missed: Int, lastFailure: String?, lastFailureKind: String?,
        finishedAt: Int64?
    ) async throws -> Bool
    /// The job with `id`, or nil.
    func job(id: Int64) async throws -> JobRecord?
    /// At most `limit` jobs, newest first.
    func jobs(limit: Int) async throws -> [JobRecord]
    /// Stores a job's picture, with the job's label.
    @discardableResult
    func add(
        jpeg: [UInt8], takenAt: Int64, width: Int, height: Int, source: String, jobID: Int64?, label: String?
    ) async throws -> MediaRecord
}

extension MediaCatalog: JobCatalog {}
