import Glibc
import ShutterCatalog
import ShutterJobRunner
import ShutterSystem

/// A `JobCatalog` over a real `MediaCatalog` whose job updates fail while the test says so, as
/// they do when SQLite finds the disk full; it counts the updates tried.
public final class FailingJobCatalog: JobCatalog {
    private struct State {
        var failingUpdates = false
        var updatesTried = 0
    }

    // Every member takes this lock; nothing in it blocks.
    private let state = LockedValue(State())
    /// The catalog that does the work while updates succeed, and answers every read.
    public let catalog: MediaCatalog

    public init(_ catalog: MediaCatalog) { self.catalog = catalog }

    /// Makes every `updateJob` throw a full disk, or stops it.
    public func failUpdates(_ failing: Bool) { state.withLock { $0.failingUpdates = failing } }

    /// How many times `updateJob` has been called.
    public var updatesTried: Int { state.withLock { $0.updatesTried } }

    public func updateJob(
        id: Int64, state: String, taken: Int, missed: Int, lastFailure: String?, lastFailureKind: String?,
        finishedAt: Int64?
    ) async throws -> Bool {
        let failing = self.state.withLock {
            $0.updatesTried += 1
            return $0.failingUpdates
        }
        if failing {
            throw CatalogError.storageFull(
                SystemError(errno: ENOSPC, call: "sqlite3: database or disk is full"))
        }
        return try await catalog.updateJob(
            id: id, state: state, taken: taken, missed: missed, lastFailure: lastFailure,
            lastFailureKind: lastFailureKind, finishedAt: finishedAt)
    }

    public func unfinishedJobs() async throws -> [JobRecord] { try await catalog.unfinishedJobs() }

    public func createJob(specJSON: String, label: String?, state: String, createdAt: Int64, startedAt: Int64)
        async throws -> JobRecord
    {
        try await catalog.createJob(
            specJSON: specJSON, label: label, state: state, createdAt: createdAt, startedAt: startedAt)
    }

    public func job(id: Int64) async throws -> JobRecord? { try await catalog.job(id: id) }

    public func jobs(limit: Int) async throws -> [JobRecord] { try await catalog.jobs(limit: limit) }

    public func add(
        jpeg: [UInt8], takenAt: Int64, width: Int, height: Int, source: String, jobID: Int64?, label: String?
    ) async throws -> MediaRecord {
        try await catalog.add(
            jpeg: jpeg, takenAt: takenAt, width: width, height: height, source: source, jobID: jobID,
            label: label)
    }
}
