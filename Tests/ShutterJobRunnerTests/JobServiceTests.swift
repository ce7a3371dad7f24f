import FoundationEssentials
import ShutterCapture
import ShutterCatalog
import ShutterJobs
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterJobRunner

/// The job service: creating, limiting and resuming jobs.
@Suite struct JobServiceTests {
    private let quiet = Logger(label: "test", level: .critical)
    private let frameInterval: UInt64 = 33_333_333

    private func makeService(
        _ directory: String, clock: ManualClock, limits: JobLimits = JobLimits()
    ) throws -> (JobService, MediaCatalog) {
        let catalog = try MediaCatalog(dataDirectory: directory, logger: quiet)
        let service = JobService(
            camera: FakeJobCamera(clock: clock), catalog: catalog, clock: clock, limits: limits,
            frameTimeoutMilliseconds: 100, logger: quiet)
        return (service, catalog)
    }

    @Test func aNewJobIsStoredScheduledWithItsNextShot() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let (service, catalog) = try makeService(directory, clock: clock)
            let spec = JobSpec(kind: .delayed(delayNanoseconds: 60_000_000_000), label: "door")
            let job = try await service.create(spec: spec, frameIntervalNanoseconds: frameInterval)
            #expect(job.record.state == "scheduled")
            #expect(job.record.label == "door")
            #expect(job.spec == spec)
            #expect(job.nextShotAtWall == clock.wallMillisecondsNow() + 60_000)
            let stored = try #require(try await catalog.job(id: job.record.id))
            #expect(try JSONDecoder().decode(JobSpec.self, from: Data(stored.specJSON.utf8)) == spec)
            #expect(stored.createdAt == clock.wallMillisecondsNow())
        }
    }

    @Test func aRefusedSpecThrowsItsError() async throws {
        try await withTemporaryDirectory { directory in
            let (service, catalog) = try makeService(directory, clock: ManualClock())
            let tooFast = JobSpec(kind: .interval(everyNanoseconds: 1_000_000, end: .count(5)))
            await #expect(throws: JobSpecError.self) {
                try await service.create(spec: tooFast, frameIntervalNanoseconds: frameInterval)
            }
            #expect(try await catalog.jobs(limit: 10).isEmpty)
        }
    }

    @Test func activeJobsAreLimitedAndCancellingMakesRoom() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let (service, catalog) = try makeService(
                directory, clock: clock, limits: JobLimits(maxActiveJobs: 2))
            let spec = JobSpec(kind: .delayed(delayNanoseconds: 60_000_000_000))
            let first = try await service.create(spec: spec, frameIntervalNanoseconds: frameInterval)
            _ = try await service.create(spec: spec, frameIntervalNanoseconds: frameInterval)
            await #expect(throws: JobSpecError.tooManyActiveJobs(limit: 2)) {
                try await service.create(spec: spec, frameIntervalNanoseconds: frameInterval)
            }
            let cancelled = try #require(try await service.cancel(id: first.record.id))
            #expect(cancelled.record.state == "cancelled")
            #expect(cancelled.nextShotAtWall == nil)
            #expect(cancelled.record.finishedAt == clock.wallMillisecondsNow())
            #expect(try await catalog.unfinishedJobs().count == 1)
            _ = try await service.create(spec: spec, frameIntervalNanoseconds: frameInterval)
            #expect(try await service.cancel(id: 99) == nil)
        }
    }

    @Test func startResumesUnfinishedJobsCountingWhatWasMissed() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let now = clock.wallMillisecondsNow()
            let (service, catalog) = try makeService(directory, clock: clock)
            let delayed = JobSpec(kind: .delayed(delayNanoseconds: 5_000_000_000))
            let interval = JobSpec(kind: .interval(everyNanoseconds: 1_000_000_000, end: .count(100)))
            let encoder = JSONEncoder()
            let late = try await catalog.createJob(
                specJSON: String(decoding: try encoder.encode(delayed), as: UTF8.self), label: nil,
                state: "scheduled", createdAt: now - 10_000, startedAt: now - 10_000)
            let running = try await catalog.createJob(
                specJSON: String(decoding: try encoder.encode(interval), as: UTF8.self), label: nil,
                state: "running", createdAt: now - 10_500, startedAt: now - 10_500)
            try await catalog.updateJob(
                id: running.id, state: "running", taken: 3, missed: 0, lastFailure: "storage full: disk",
                lastFailureKind: "storage_full", finishedAt: nil)

            try await service.start()
            let failed = try #require(try await service.job(id: late.id))
            #expect(failed.record.state == "failed")
            #expect(failed.record.missed == 1)
            #expect(failed.record.finishedAt == now)
            // Slots 0 to 10 fell due by 10.5 s; 3 were taken before the restart, 8 passed while down.
            let resumed = try #require(try await service.job(id: running.id))
            #expect(resumed.record.state == "running")
            #expect(resumed.record.taken == 3 && resumed.record.missed == 8)
            #expect(resumed.nextShotAtWall == now + 500)
            #expect(try await catalog.job(id: running.id)?.missed == 8)
            // The failure it stopped with survives the restart, kind and all.
            #expect(resumed.lastFailure == ShotFailure(.storageFull, "storage full: disk"))
            #expect(try await catalog.job(id: running.id)?.lastFailureKind == "storage_full")
            await service.stop()
        }
    }
}
