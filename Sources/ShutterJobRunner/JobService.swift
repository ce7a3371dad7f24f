import FoundationEssentials
import ShutterCapture
import ShutterCatalog
import ShutterJobs
import ShutterSystem

/// The one owner of every job schedule: it resumes them at start, takes their shots and persists them.
///
/// A single runner task sleeps until the earliest due shot (it is woken when jobs are added,
/// cancelled or a shot ends), advances the schedules that are due and starts each shot in its own
/// task, so a burst never delays another job's timed shot. Each job has at most one shot in flight.
/// A shot holds its frame only until the catalog has stored it.
public actor JobService {
    private let camera: any JobCamera
    private let catalog: MediaCatalog
    private let clock: any Clock
    private let limits: JobLimits
    private let frameTimeoutMilliseconds: Int
    private let logger: Logger

    // Live schedules by job id; a job leaves once it is final and no shot of it is in flight.
    private var schedules: [Int64: JobSchedule] = [:] {
        // While any job is active the camera stays open, so shots are not delayed by
        // reopening and warming up after idle.
        didSet {
            if oldValue.isEmpty != schedules.isEmpty { camera.keepAwake(!schedules.isEmpty) }
        }
    }
    // Jobs with a shot in flight; the runner does not advance them.
    private var shooting: Set<Int64> = []
    // The capture instant of each burst's previous frame, so the next shot waits for a newer frame.
    private var lastCaptured: [Int64: MonotonicInstant] = [:]
    // Requests waiting for a job to end (`POST /snap` with `wait=true`).
    private var finishWaiters: [Int64: [CheckedContinuation<Void, Never>]] = [:]
    // Creations between their room check and their insertion, counted so two cannot share a slot.
    private var pendingCreations = 0
    private var runner: Task<Void, Never>?
    private var sleeper: Task<Void, Never>?
    /// The runner waiting, with no deadline, for `replan` to ring.
    private var doorbell: CheckedContinuation<Void, Never>?
    // Set by `replan()`, so a change made while the runner was busy is seen before it sleeps.
    private var replanRequested = false

    /// A service taking frames from `camera` and storing pictures in `catalog`; shots fall due,
    /// and the runner sleeps, on `clock`.
    public init(
        camera: any JobCamera, catalog: MediaCatalog, clock: any Clock, limits: JobLimits,
        frameTimeoutMilliseconds: Int, logger: Logger
    ) {
        self.camera = camera
        self.catalog = catalog
        self.clock = clock
        self.limits = limits
        self.frameTimeoutMilliseconds = frameTimeoutMilliseconds
        self.logger = logger
    }

    /// Resumes every unfinished job from the catalog and starts the runner.
    public func start() async throws {
        guard runner == nil else { return }
        for record in try await catalog.unfinishedJobs() {
            await resume(record)
        }
        runner = Task { await self.run() }
    }

    /// Stops the runner; jobs stay unfinished in the catalog and resume at the next start.
    public func stop() {
        runner?.cancel()
        sleeper?.cancel()
        doorbell?.resume()
        doorbell = nil
        runner = nil
        for waiters in finishWaiters.values {
            for waiter in waiters { waiter.resume() }
        }
        finishWaiters = [:]
    }

    /// Validates `spec`, stores it as a new job and schedules it.
    ///
    /// Throws `JobSpecError` for a spec that is refused (including too many active jobs) and
    /// `CatalogError` if it cannot be stored.
    public func create(spec: JobSpec, frameIntervalNanoseconds: UInt64) async throws -> JobSnapshot {
        let nowWall = clock.wallMillisecondsNow()
        try spec.validate(
            limits: limits, frameIntervalNanoseconds: frameIntervalNanoseconds, nowWallMillis: nowWall)
        let active = schedules.values.filter { !$0.state.isFinal }.count + pendingCreations
        try limits.checkRoom(activeJobs: active)
        pendingCreations += 1
        defer { pendingCreations -= 1 }
        let schedule = JobSchedule(spec: spec, nowWall: nowWall, nowMonotonic: clock.monotonicNow())
        let specJSON = String(decoding: try JSONEncoder().encode(spec), as: UTF8.self)
        let record = try await catalog.createJob(
            specJSON: specJSON, label: spec.label, state: schedule.state.rawValue, createdAt: nowWall,
            startedAt: schedule.startedAtWall)
        schedules[record.id] = schedule
        logger.info("job created", ["job_id": String(record.id), "spec": specJSON])
        replan()
        return snapshot(record)
    }

    /// Cancels the job with `id` (its pictures stay); nil if there is no such job.
    public func cancel(id: Int64) async throws -> JobSnapshot? {
        if var schedule = schedules[id], !schedule.state.isFinal {
            schedule.cancel()
            schedules[id] = schedule
            logger.info("job cancelled", ["job_id": String(id)])
            // A shot in flight still reports and is counted; the job leaves when it does.
            if !shooting.contains(id) { await finish(id) }
            replan()
        }
        return try await job(id: id)
    }

    /// The job with `id`, or nil if there is none.
    public func job(id: Int64) async throws -> JobSnapshot? {
        guard let record = try await catalog.job(id: id) else { return nil }
        return snapshot(record)
    }

    /// At most `limit` jobs, newest first.
    public func jobs(limit: Int) async throws -> [JobSnapshot] {
        try await catalog.jobs(limit: limit).map(snapshot)
    }

    /// Returns once the job with `id` has ended (at once if it has or does not exist).
    public func waitUntilFinished(id: Int64) async {
        guard schedules[id] != nil, runner != nil else { return }
        await withCheckedContinuation { finishWaiters[id, default: []].append($0) }
    }

    // MARK: - Running

    private func resume(_ record: JobRecord) async {
        let metadata = ["job_id": String(record.id)]
        guard let spec = try? JSONDecoder().decode(JobSpec.self, from: Data(record.specJSON.utf8)) else {
            logger.error("cannot read a stored job spec; marking the job failed", metadata)
            await store(
                id: record.id, state: JobState.failed.rawValue, taken: record.taken, missed: record.missed,
                lastFailure: ShotFailure(.failed, "the stored spec could not be read"), finished: true)
            return
        }
        // Kept, or the next persist would erase the failure the job stopped with.
        let schedule = JobSchedule.resume(
            spec: spec, startedAtWall: record.startedAt, takenSoFar: record.taken,
            missedSoFar: record.missed, lastFailure: record.lastShotFailure,
            nowWall: clock.wallMillisecondsNow(),
            nowMonotonic: clock.monotonicNow())
        schedules[record.id] = schedule
        logger.notice(
            "job resumed",
            metadata.merging(
                [
                    "state": schedule.state.rawValue,
                    "missed_while_down": String(schedule.missed - record.missed),
                ]
            ) { $1 })
        if schedule.state.isFinal {
            await finish(record.id)
        } else {
            await persist(record.id)
        }
    }

    private func run() async {
        while !Task.isCancelled {
            replanRequested = false
            let now = clock.monotonicNow()
            var earliest: MonotonicInstant?
            var acted = false
            for id in schedules.keys.sorted() where !shooting.contains(id) {
                guard var schedule = schedules[id] else { continue }
                let due = schedule.nextDue
                if let due, due > now {
                    earliest = min(earliest ?? due, due)
                    continue
                }
                let actions = schedule.advance(now: now)
                schedules[id] = schedule
                if !actions.isEmpty { acted = true }
                await carryOut(actions, id: id, due: due ?? now, now: now)
            }
            if acted || replanRequested { continue }
            if let earliest {
                let clock = self.clock
                let sleep = Task<Void, Never> { try? await clock.sleep(until: earliest) }
                sleeper = sleep
                await sleep.value
                sleeper = nil
            } else {
                // Nothing is due (no jobs, or every job is mid-shot): wait for `replan` without a
                // timer. A cancelled Task.sleep keeps its timer until the deadline, so a long sleep
                // cancelled on every shot held memory for as long as the sleep would have lasted.
                await withCheckedContinuation { doorbell = $0 }
            }
        }
    }

    private func carryOut(_ actions: [JobAction], id: Int64, due: MonotonicInstant, now: MonotonicInstant)
        async
    {
        var missedShots = false
        for action in actions {
            switch action {
            case .missedShots(let count):
                missedShots = true
                logger.warning("shots missed", ["job_id": String(id), "count": String(count)])
                await persist(id)
            case .takeShot(let index):
                shooting.insert(id)
                let notBefore: MonotonicInstant
                if schedules[id]?.pacing == .everyFrame {
                    // The next frame after the previous shot's, so each frame is stored once, in order.
                    notBefore = max(due, lastCaptured[id].map { $0.advanced(by: 1) } ?? due)
                } else {
                    // After missed slots the shot is for the latest slot, due later than `due`.
                    notBefore = missedShots ? now : due
                }
                Task { await self.shoot(id: id, index: index, notBefore: notBefore) }
            case .finished(let state):
                logger.info("job finished", ["job_id": String(id), "state": state.rawValue])
                await finish(id)
            }
        }
    }

    private func shoot(id: Int64, index: Int, notBefore: MonotonicInstant) async {
        let metadata = ["job_id": String(id), "shot": String(index)]
        do {
            let frame = try await camera.frame(
                capturedAtOrAfter: notBefore, timeoutMilliseconds: frameTimeoutMilliseconds)
            // The job's label goes with each of its pictures, so `GET /library?label=` finds them.
            let label = schedules[id]?.spec.label.flatMap { $0.isEmpty ? nil : $0 }
            try await catalog.add(
                jpeg: try camera.storedPicture(of: frame, label: label, jobID: id),
                takenAt: frame.wallMilliseconds,
                width: frame.width, height: frame.height,
                source: camera.cameraName, jobID: id, label: label)
            lastCaptured[id] = frame.capturedAt
            schedules[id]?.shotSucceeded(index: index)
        } catch {
            // Capture stops before shutdown ends; the resume at the next start accounts for this slot.
            if runner == nil { return }
            // A full disk (507 for a snap) or a missing camera (503) costs this shot only; the job goes on.
            let failure = Self.shotFailure(error)
            logger.warning(
                "shot failed",
                metadata.merging(["error": String(describing: error), "kind": failure.kind.rawValue]) { $1 })
            schedules[id]?.shotFailed(index: index, failure: failure)
        }
        shooting.remove(id)
        if schedules[id]?.state.isFinal == true {
            await finish(id)
        } else {
            await persist(id)
        }
        replan()
    }

    /// Persists a final job and forgets its schedule, waking anyone waiting for it.
    private func finish(_ id: Int64) async {
        await persist(id)
        schedules[id] = nil
        lastCaptured[id] = nil
        for waiter in finishWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
    }

    private func persist(_ id: Int64) async {
        guard let schedule = schedules[id] else { return }
        await store(
            id: id, state: schedule.state.rawValue, taken: schedule.taken, missed: schedule.missed,
            lastFailure: schedule.lastFailure, finished: schedule.state.isFinal)
    }

    private func store(
        id: Int64, state: String, taken: Int, missed: Int, lastFailure: ShotFailure?, finished: Bool
    )
        async
    {
        do {
            try await catalog.updateJob(
                id: id, state: state, taken: taken, missed: missed, lastFailure: lastFailure?.message,
                lastFailureKind: lastFailure?.kind.rawValue,
                finishedAt: finished ? clock.wallMillisecondsNow() : nil)
        } catch {
            // The schedule in memory stays right; the next update or the next resume catches up.
            logger.error("cannot persist a job", ["job_id": String(id), "error": "\(error)"])
        }
    }

    /// Wakes the runner so it plans again from the current schedules.
    private func replan() {
        replanRequested = true
        sleeper?.cancel()
        doorbell?.resume()
        doorbell = nil
    }

    private func snapshot(_ stored: JobRecord) -> JobSnapshot {
        var record = stored
        var nextShotAtWall: Int64?
        if let schedule = schedules[stored.id] {
            record.state = schedule.state.rawValue
            record.taken = schedule.taken
            record.missed = schedule.missed
            if let failure = schedule.lastFailure {
                record.lastFailure = failure.message
                record.lastFailureKind = failure.kind.rawValue
            }
            if let due = schedule.nextDue {
                let now = clock.monotonicNow()
                let wall = clock.wallMillisecondsNow()
                nextShotAtWall =
                    due >= now
                    ? wall + Int64(due.nanoseconds(since: now) / 1_000_000)
                    : wall - Int64(now.nanoseconds(since: due) / 1_000_000)
            }
        }
        let spec = try? JSONDecoder().decode(JobSpec.self, from: Data(stored.specJSON.utf8))
        return JobSnapshot(record: record, spec: spec, nextShotAtWall: nextShotAtWall)
    }

    /// What a shot's error means for the job: its kind, told apart by type, and its sentence.
    ///
    /// The sentence is shown in the job's JSON, so a failure the client cannot act on says only
    /// where to look (its text names files and SQL; the log line has it), as a 500 does.
    static func shotFailure(_ error: any Error) -> ShotFailure {
        switch error {
        case let error as CaptureError: ShotFailure(.cameraUnavailable, "camera unavailable: \(error)")
        case let error as CatalogError where error.isStorageFull: ShotFailure(.storageFull, error.description)
        default: ShotFailure(.failed, "the picture could not be stored; see the server log")
        }
    }
}
