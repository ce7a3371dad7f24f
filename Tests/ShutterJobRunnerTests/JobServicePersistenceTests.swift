import ShutterCapture
import ShutterCatalog
import ShutterJobs
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterJobRunner

/// A job whose end the catalog cannot store (a full disk) is still shown as it ended, can still
/// be cancelled, and its end is stored again with backoff on the clock, a bounded number of times.
@Suite(.timeLimit(.minutes(1))) struct JobServicePersistenceTests {
    private static let quiet = Logger(label: "test", level: .critical)
    private static let second: UInt64 = 1_000_000_000

    private struct Fixture {
        let clock = ManualClock()
        let camera: FakeJobCamera
        let catalog: FailingJobCatalog
        let service: JobService

        init(_ directory: String) throws {
            camera = FakeJobCamera(clock: clock)
            catalog = FailingJobCatalog(
                try MediaCatalog(
                    dataDirectory: directory, logger: JobServicePersistenceTests.quiet, clock: clock))
            service = JobService(
                camera: camera, catalog: catalog, clock: clock, limits: JobLimits(),
                frameTimeoutMilliseconds: 100,
                logger: JobServicePersistenceTests.quiet)
        }

        func create(_ json: String) async throws -> Int64 {
            let spec = try JobSpec.parse(json: Array(json.utf8))
            return try await service.create(spec: spec, frameIntervalNanoseconds: 33_333_333).record.id
        }

        /// The job's row as the catalog has it.
        func stored(_ id: Int64) async throws -> JobRecord {
            try #require(try await catalog.catalog.job(id: id))
        }
    }

    @Test func aCancelThatCannotBeStoredStillCancelsAndIsStoredLater() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let id = try await fixture.create(#"{"kind": "delayed", "delay": 60}"#)
            fixture.catalog.failUpdates(true)
            let cancelled = try #require(try await fixture.service.cancel(id: id))
            // Required: without it there is no retry to wait for below.
            try #require(cancelled.record.state == "cancelled")
            #expect(cancelled.record.finishedAt == fixture.clock.wallMillisecondsNow())
            #expect(try await fixture.service.job(id: id)?.record.state == "cancelled")
            #expect(try await fixture.service.jobs(limit: 10).map(\.record.state) == ["cancelled"])
            #expect(try await fixture.stored(id).state == "scheduled")

            // The first retry, a second later, fails too; the second, two seconds after, stores it.
            await fixture.clock.sleepers(atLeast: 1)
            fixture.clock.advance(by: Self.second)
            await fixture.clock.sleepers(atLeast: 1)
            #expect(try await fixture.stored(id).state == "scheduled")
            fixture.catalog.failUpdates(false)
            fixture.clock.advance(by: 2 * Self.second)
            for _ in 0..<100_000 where try await fixture.stored(id).state != "cancelled" {
                await Task.yield()
            }
            let stored = try await fixture.stored(id)
            #expect(
                stored.finishedAt == cancelled.record.finishedAt, "the instant it ended, not of the retry")
            #expect(try await fixture.service.job(id: id)?.record.state == "cancelled")
        }
    }

    @Test func aJobEndedByAFailedShotShowsItsFailureAndCancelAnswersIt() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            try await fixture.service.start()
            let id = try await fixture.create(#"{"kind": "delayed", "delay": 1}"#)
            fixture.camera.fail(with: .cameraUnavailable(.disconnected("/dev/video0"), camera: "fake"))
            fixture.catalog.failUpdates(true)
            await fixture.clock.sleepers(atLeast: 1)
            fixture.clock.advance(by: Self.second)
            await fixture.service.waitUntilFinished(id: id)

            let job = try #require(try await fixture.service.job(id: id))
            #expect(job.record.state == "failed")
            #expect(job.record.finishedAt != nil)
            #expect(job.lastFailure?.kind == .cameraUnavailable)
            #expect(try await fixture.stored(id).finishedAt == nil)
            let cancelled = try #require(try await fixture.service.cancel(id: id))
            #expect(cancelled.record.state == "failed", "an ended job stays as it ended")
            await fixture.service.stop()
        }
    }

    @Test func retriesAreBoundedAndBackOff() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let id = try await fixture.create(#"{"kind": "delayed", "delay": 60}"#)
            fixture.catalog.failUpdates(true)
            try #require(try await fixture.service.cancel(id: id)?.record.state == "cancelled")
            #expect(fixture.catalog.updatesTried == 1)
            let delays = JobService.saveRetryDelaysNanoseconds
            #expect(delays.count == 6 && delays.first == Self.second && delays.last == 32 * Self.second)
            for (attempt, delay) in delays.enumerated() {
                await fixture.clock.sleepers(atLeast: 1)
                let asleep = fixture.clock.monotonicNow()
                #expect(fixture.clock.nextDeadline == asleep.advanced(by: delay))
                fixture.clock.advance(by: delay)
                for _ in 0..<100_000 where fixture.catalog.updatesTried < attempt + 2 { await Task.yield() }
                try #require(fixture.catalog.updatesTried == attempt + 2)
            }
            // Given up: nothing sleeps, nothing more is tried, and the job is still shown cancelled.
            for _ in 0..<100 { await Task.yield() }
            #expect(fixture.clock.sleeperCount == 0)
            #expect(fixture.catalog.updatesTried == 1 + delays.count)
            #expect(try await fixture.service.job(id: id)?.record.state == "cancelled")
        }
    }

    @Test func stoppingTriesAnUnsavedEndOnceMoreSoItDoesNotResumeAtTheNextStart() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let id = try await fixture.create(#"{"kind": "delayed", "delay": 60}"#)
            fixture.catalog.failUpdates(true)
            try #require(try await fixture.service.cancel(id: id)?.record.state == "cancelled")
            fixture.catalog.failUpdates(false)
            await fixture.service.stop()
            #expect(try await fixture.stored(id).state == "cancelled")
            #expect(try await fixture.catalog.unfinishedJobs().isEmpty)
        }
    }
}
