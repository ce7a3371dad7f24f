import ShutterCamera
import ShutterCapture
import ShutterCatalog
import ShutterJobs
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterJobRunner

/// The job runner on virtual time: shots fall due only when the test advances the clock, and
/// the runner is known to have finished a shot when it sleeps again (`sleepers(atLeast:)`).
// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct JobRunnerTests {
    private static let quiet = Logger(label: "test", level: .critical)
    private static let second: UInt64 = 1_000_000_000

    private struct Fixture {
        let clock = ManualClock()
        let camera: FakeJobCamera
        let catalog: MediaCatalog
        let service: JobService

        init(_ directory: String, minimumFreeBytes: Int64 = 0, frameGate: HandlerGate? = nil) throws {
            camera = FakeJobCamera(clock: clock, frameGate: frameGate)
            catalog = try MediaCatalog(
                dataDirectory: directory, logger: JobRunnerTests.quiet, minimumFreeBytes: minimumFreeBytes,
                clock: clock)
            service = JobService(
                camera: camera, catalog: catalog, clock: clock, limits: JobLimits(),
                frameTimeoutMilliseconds: 100,
                logger: JobRunnerTests.quiet)
        }

        /// Creates and runs a job from `json`.
        func start(_ json: String) async throws -> Int64 {
            try await service.start()
            let spec = try JobSpec.parse(json: Array(json.utf8))
            return try await service.create(spec: spec, frameIntervalNanoseconds: 33_333_333).record.id
        }

        /// The ids of the job's pictures, in the order taken.
        func pictures(_ job: Int64) async throws -> [MediaRecord] {
            try await catalog.page(after: 0, limit: 100, jobID: job).items
        }

        func job(_ id: Int64) async throws -> JobSnapshot {
            try #require(try await service.job(id: id))
        }
    }

    @Test func anIntervalJobTakesEachShotWhenItFallsDue() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let start = fixture.clock.monotonicNow()
            let id = try await fixture.start(#"{"kind": "interval", "every": 2, "count": 3}"#)
            // Shot 0 is due at once; the runner then sleeps until shot 1.
            await fixture.clock.sleepers(atLeast: 1)
            #expect(fixture.clock.nextDeadline == start.advanced(by: 2 * Self.second))
            #expect(try await fixture.pictures(id).count == 1)
            fixture.clock.advance(by: 2 * Self.second - 1)
            #expect(try await fixture.pictures(id).count == 1, "not a nanosecond early")
            fixture.clock.advance(by: 1)
            await fixture.clock.sleepers(atLeast: 1)
            #expect(try await fixture.pictures(id).count == 2)
            fixture.clock.advance(by: 2 * Self.second)
            await fixture.service.waitUntilFinished(id: id)
            let job = try await fixture.job(id)
            #expect(job.record.state == "done" && job.record.taken == 3 && job.record.missed == 0)
            let pictures = try await fixture.pictures(id)
            #expect(pictures.map(\.jobID) == [id, id, id])
            #expect(pictures.map(\.source) == ["fake", "fake", "fake"])
            // Stamped at the instants they were due, two seconds apart on the wall clock too.
            #expect(zip(pictures, pictures.dropFirst()).allSatisfy { $1.takenAt - $0.takenAt == 2000 })
            await fixture.service.stop()
        }
    }

    @Test func aStallMissesTheSlotsItSleptThroughInsteadOfCatchingUp() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let id = try await fixture.start(#"{"kind": "interval", "every": 1, "count": 5}"#)
            await fixture.clock.sleepers(atLeast: 1)
            // The runner wakes 2.5 s late: slots 1 and 2 are missed, slot 3 is taken now.
            fixture.clock.advance(by: 3 * Self.second + Self.second / 2)
            await fixture.clock.sleepers(atLeast: 1)
            var job = try await fixture.job(id)
            #expect(job.record.taken == 2 && job.record.missed == 2)
            #expect(try await fixture.pictures(id).count == 2)
            fixture.clock.advance(by: Self.second / 2)
            await fixture.service.waitUntilFinished(id: id)
            job = try await fixture.job(id)
            #expect(job.record.state == "done" && job.record.taken == 3 && job.record.missed == 2)
            await fixture.service.stop()
        }
    }

    @Test func aShotTheCameraCannotTakeIsMissedAndTheJobGoesOn() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            fixture.camera.fail(with: .cameraUnavailable(.disconnected("/dev/video0"), camera: "fake"))
            let id = try await fixture.start(#"{"kind": "interval", "every": 1, "count": 2}"#)
            await fixture.clock.sleepers(atLeast: 1)
            var job = try await fixture.job(id)
            #expect(job.record.missed == 1 && job.record.taken == 0)
            #expect(job.lastFailure?.kind == .cameraUnavailable)
            #expect(job.lastFailure?.message.contains("/dev/video0") == true)
            // Stored with its kind, so it survives a restart.
            #expect(try await fixture.catalog.job(id: id)?.lastFailureKind == "camera_unavailable")
            fixture.camera.recover()
            fixture.clock.advance(by: Self.second)
            await fixture.service.waitUntilFinished(id: id)
            job = try await fixture.job(id)
            #expect(job.record.state == "done" && job.record.taken == 1 && job.record.missed == 1)
            await fixture.service.stop()
        }
    }

    @Test func aFullDiskIsAStorageFailure() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory, minimumFreeBytes: Int64.max / 2)
            let id = try await fixture.start(#"{"kind": "delayed", "delay": 1}"#)
            await fixture.clock.sleepers(atLeast: 1)
            fixture.clock.advance(by: Self.second)
            await fixture.service.waitUntilFinished(id: id)
            let job = try await fixture.job(id)
            #expect(job.record.state == "failed" && job.record.missed == 1)
            #expect(job.lastFailure?.kind == .storageFull)
            #expect(try await fixture.pictures(id).isEmpty)
            await fixture.service.stop()
        }
    }

    @Test func aBurstStoresSuccessiveFramesEachOnce() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let id = try await fixture.start(#"{"kind": "burst", "count": 5}"#)
            await fixture.service.waitUntilFinished(id: id)
            let job = try await fixture.job(id)
            #expect(job.record.state == "done" && job.record.taken == 5)
            #expect(fixture.camera.framesServed == 5)
            let pictures = try await fixture.pictures(id)
            #expect(pictures.count == 5)
            #expect(Set(pictures.map(\.sha256)).count == 5, "five different frames")
            await fixture.service.stop()
        }
    }

    @Test func cancellingStopsTheShotsAndKeepsThePictures() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let id = try await fixture.start(#"{"kind": "interval", "every": 1, "count": 10}"#)
            await fixture.clock.sleepers(atLeast: 1)
            #expect(fixture.camera.isKeptAwake, "the camera stays open while a job is active")
            let cancelled = try #require(try await fixture.service.cancel(id: id))
            #expect(cancelled.record.state == "cancelled" && cancelled.nextShotAtWall == nil)
            #expect(!fixture.camera.isKeptAwake)
            fixture.clock.advance(by: 5 * Self.second)
            #expect(fixture.clock.sleeperCount == 0, "nothing left to wake for")
            #expect(try await fixture.pictures(id).count == 1)
            #expect(
                try await fixture.catalog.job(id: id)?.finishedAt == fixture.clock.wallMillisecondsNow()
                    - 5000)
            await fixture.service.stop()
        }
    }

    /// The daemon exits as soon as its services have stopped, and `exit` tears down OpenSSL: a
    /// shot still storing its picture then hashed it with what had been freed (a SEGV at
    /// shutdown, docs/sanitizers.md). `stop` now returns only once the shot in flight has
    /// ended, and a job cancelled under it has its end stored, so it does not resume at the
    /// next start.
    @Test func stopWaitsForTheShotInFlightAndStoresTheEndOfAJobCancelledUnderIt() async throws {
        try await withTemporaryDirectory { directory in
            let gate = HandlerGate()
            let fixture = try Fixture(directory, frameGate: gate)
            let id = try await fixture.start(#"{"kind": "burst", "count": 2}"#)
            // Shot 0 waits for its frame; the cancelled job's end waits for the shot.
            await gate.arrivals(atLeast: 1)
            let cancelled = try #require(try await fixture.service.cancel(id: id))
            #expect(cancelled.record.state == "cancelled")
            #expect(try await fixture.catalog.job(id: id)?.finishedAt == nil)
            let stopping = Task { await fixture.service.stop() }
            gate.open()
            await stopping.value
            let stored = try #require(try await fixture.catalog.job(id: id))
            #expect(stored.state == "cancelled" && stored.taken == 1)
            #expect(stored.finishedAt == fixture.clock.wallMillisecondsNow())
            #expect(try await fixture.pictures(id).count == 1)
            #expect(try await fixture.catalog.unfinishedJobs().isEmpty, "nothing resumes at the next start")
            #expect(gate.arrivals == 1, "no shot after the cancel")
        }
    }

    /// Once `stop` has returned, nothing of the service runs: a job falling due later takes no shot.
    @Test func noShotIsTakenAfterStop() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let id = try await fixture.start(#"{"kind": "interval", "every": 1, "count": 5}"#)
            await fixture.clock.sleepers(atLeast: 1)
            await fixture.service.stop()
            #expect(fixture.clock.sleeperCount == 0, "the runner sleeps no more")
            fixture.clock.advance(by: 3 * Self.second)
            #expect(fixture.camera.framesServed == 1)
            #expect(try await fixture.catalog.job(id: id)?.state == "running")
        }
    }

    @Test func aStartAtInTheFutureWaitsForItsWallTime() async throws {
        try await withTemporaryDirectory { directory in
            let fixture = try Fixture(directory)
            let startAt = Timestamp.iso8601(
                millisecondsSince1970: fixture.clock.wallMillisecondsNow() + 60_000)
            let id = try await fixture.start(#"{"kind": "delayed", "delay": 0, "start_at": "\#(startAt)"}"#)
            await fixture.clock.sleepers(atLeast: 1)
            #expect(try await fixture.job(id).nextShotAtWall == fixture.clock.wallMillisecondsNow() + 60_000)
            fixture.clock.advance(by: 60 * Self.second)
            await fixture.service.waitUntilFinished(id: id)
            #expect(try await fixture.pictures(id).count == 1)
            await fixture.service.stop()
        }
    }

    /// A job's last failure is shown in its JSON: one the client cannot act on names no file or
    /// SQL (the log has them), as a 500's detail does.
    @Test func aFailureOnlyTheLogCanExplainSaysSo() {
        let database = CatalogError.database(
            DatabaseError(extendedResultCode: 11, message: "malformed", sql: "INSERT INTO media secret"))
        let failure = JobService.shotFailure(database)
        #expect(failure.kind == .failed)
        #expect(!failure.message.contains("secret") && !failure.message.contains("malformed"))
        let full = JobService.shotFailure(CatalogError.storageFull(SystemError(errno: 28, call: "write")))
        #expect(full.kind == .storageFull && full.message.contains("No space left"))
        let gone = JobService.shotFailure(
            CaptureError.cameraUnavailable(.disconnected("/dev/video0"), camera: "cam"))
        #expect(gone.kind == .cameraUnavailable && gone.message.contains("/dev/video0"))
    }
}
