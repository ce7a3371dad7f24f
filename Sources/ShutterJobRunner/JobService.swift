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
    private let catalog: any JobCatalog
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
    // The task of each shot in flight, so `stop` can wait for them: a shot that went on after
    // `stop` returned ran while the daemon exited (see `stop`). Keyed by a number of its own,
    // not the job: a job's next shot may start while the previous one still stores the job.
    private var shots: [UInt64: Task<Void, Never>] = [:]
    private var shotsStarted: UInt64 = 0
    // Set by `stop`: no shot starts after it, and a shot that fails while it waits is not
    // counted (the resume at the next start accounts for its slot).
    private var isStopping = false
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
    // Jobs that have ended but whose end the catalog has not stored (a full disk, a failing
    // database): what they are shown as, and what `retrySaving` keeps trying to store. Without
    // this a job whose end could not be saved would read back as still running, for good.
    private var unsavedEnds: [Int64: JobEnd] = [:]
    // Stores `unsavedEnds` with backoff; nil while there is nothing to retry.
    private var saver: Task<Void, Never>?

    /// A job's final state as it will be stored.
    struct JobEnd: Sendable {
        var state: String
        var taken: Int
        var missed: Int
        var lastFailure: ShotFailure?
        var finishedAt: Int64
    }

    /// How far apart a job's end that could not be stored is tried again: 1, 2, 4, ... 32 seconds
    /// (about a minute in all). After that it is logged and kept in memory, shown as it ended,
    /// and tried again with the next end that cannot be stored.
    static let saveRetryDelaysNanoseconds: [UInt64] = (0..<6).map { 1_000_000_000 << UInt64($0) }

    /// A service taking frames from `camera` and storing pictures in `catalog`; shots fall due,
    /// and the runner sleeps, on `clock`.
    public init(
        camera: any JobCamera, catalog: any JobCatalog, clock: any Clock, limits: JobLimits,
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
    ///
    /// Returns only once the runner has ended and every shot in flight has ended (with its frame,
    /// or the frame timeout; the camera is stopped after the jobs) and stored what it took: the
    /// daemon exits right after the services stop, and `exit` runs OpenSSL's clean-up, which
    /// frees what `SHA256` needs, while a shot still hashing its picture on the catalog's thread
    /// would read it (a SEGV at shutdown, docs/sanitizers.md). A job cancelled under its shot
    /// has its end stored by the shot, so it no longer resumes at the next start.
    ///
    /// A job's end not stored yet is tried once more: left unstored, the job would resume at the
    /// next start as if it had never ended.
    public func stop() async {
        isStopping = true
        runner?.cancel()
        sleeper?.cancel()
        doorbell?.resume()
        doorbell = nil
        // The runner may be storing a job's state; cancelled, it starts no shot and ends at its
        // next check.
        await runner?.value
        // No shot starts any more, so the set only shrinks; each removes itself as it ends.
        while let shot = shots.values.first { await shot.value }
        saver?.cancel()
        saver = nil
        for (id, end) in unsavedEnds.sorted(by: { $0.key < $1.key }) where await store(id: id, end) {
            unsavedEnds[id] = nil
        }
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

    /// Cancels the job with `id` (its pictures stay); nil if there is no such job. A job that has
    /// already ended is answered as it ended, whether or not the catalog has stored that yet.
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
            await end(
                record.id,
                JobEnd(
                    state: JobState.failed.rawValue, taken: record.taken, missed: record.missed,
                    lastFailure: ShotFailure(.failed, "the stored spec could not be read"),
                    finishedAt: clock.wallMillisecondsNow()))
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
            // `stop` may have come while this pass was storing a job: it waits for the runner
            // to end, so the runner must not go to sleep now.
            if Task.isCancelled { break }
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
                // Stopping: the slot is left to the resume at the next start, as if the daemon
                // had stopped just before it.
                if isStopping { continue }
                shooting.insert(id)
                let notBefore: MonotonicInstant
                if schedules[id]?.pacing == .everyFrame {
                    // The next frame after the previous shot's, so each frame is stored once, in order.
                    notBefore = max(due, lastCaptured[id].map { $0.advanced(by: 1) } ?? due)
                } else {
                    // After missed slots the shot is for the latest slot, due later than `due`.
                    notBefore = missedShots ? now : due
                }
                shotsStarted += 1
                let shot = shotsStarted
                // Stored before the task first runs on this actor, so `shotEnded` finds it.
                shots[shot] = Task {
                    await self.shoot(id: id, index: index, notBefore: notBefore)
                    self.shotEnded(shot)
                }
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
        } catch let error where !isStopping {
            // A full disk (507 for a snap) or a missing camera (503) costs this shot only; the job goes on.
            let failure = Self.shotFailure(error)
            logger.warning(
                "shot failed",
                metadata.merging(["error": String(describing: error), "kind": failure.kind.rawValue]) { $1 })
            schedules[id]?.shotFailed(index: index, failure: failure)
        } catch {
            // Stopping: not counted, the resume at the next start accounts for this slot. The job
            // is still stored below, so one cancelled under this shot ends as cancelled.
        }
        shooting.remove(id)
        if schedules[id]?.state.isFinal == true {
            await finish(id)
        } else {
            await persist(id)
        }
        replan()
    }

    private func shotEnded(_ shot: UInt64) {
        shots[shot] = nil
    }

    /// Persists a final job and forgets its schedule, waking anyone waiting for it.
    private func finish(_ id: Int64) async {
        if let schedule = schedules[id] {
            await end(
                id,
                JobEnd(
                    state: schedule.state.rawValue, taken: schedule.taken, missed: schedule.missed,
                    lastFailure: schedule.lastFailure, finishedAt: clock.wallMillisecondsNow()))
        }
        schedules[id] = nil
        lastCaptured[id] = nil
        for waiter in finishWaiters.removeValue(forKey: id) ?? [] { waiter.resume() }
    }

    /// Stores a job's end; if the catalog refuses it, keeps it to show and to store again later.
    private func end(_ id: Int64, _ end: JobEnd) async {
        if await store(id: id, end) { return }
        unsavedEnds[id] = end
        if saver == nil { saver = Task { await self.retrySaving() } }
    }

    /// Tries the unsaved ends again after each of `saveRetryDelaysNanoseconds`, on the clock.
    private func retrySaving() async {
        for delay in Self.saveRetryDelaysNanoseconds {
            try? await clock.sleep(until: clock.monotonicNow().advanced(by: delay))
            if Task.isCancelled { return }
            for (id, end) in unsavedEnds.sorted(by: { $0.key < $1.key }) {
                guard await store(id: id, end) else { continue }
                unsavedEnds[id] = nil
                logger.notice("job end stored", ["job_id": String(id), "state": end.state])
            }
            if unsavedEnds.isEmpty { break }
        }
        saver = nil
        for id in unsavedEnds.keys.sorted() {
            logger.error(
                "job end not stored; shown as ended until the daemon stops",
                ["job_id": String(id), "state": unsavedEnds[id]?.state ?? ""])
        }
    }

    private func persist(_ id: Int64) async {
        guard let schedule = schedules[id] else { return }
        await store(
            id: id,
            JobEnd(
                state: schedule.state.rawValue, taken: schedule.taken, missed: schedule.missed,
                lastFailure: schedule.lastFailure, finishedAt: clock.wallMillisecondsNow()),
            finished: schedule.state.isFinal)
    }

    /// Writes a job's row; false (logged) if the catalog failed.
    @discardableResult
    private func store(id: Int64, _ end: JobEnd, finished: Bool = true) async -> Bool {
        do {
            try await catalog.updateJob(
                id: id, state: end.state, taken: end.taken, missed: end.missed,
                lastFailure: end.lastFailure?.message, lastFailureKind: end.lastFailure?.kind.rawValue,
                finishedAt: finished ? end.finishedAt : nil)
            return true
        } catch {
            // The schedule (or the unsaved end) in memory stays right; the next update, a retry or
            // the next resume catches up.
            logger.error("cannot persist a job", ["job_id": String(id), "error": "\(error)"])
            return false
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
        if let end = unsavedEnds[stored.id] {
            record.state = end.state
            record.taken = end.taken
            record.missed = end.missed
            record.lastFailure = end.lastFailure?.message
            record.lastFailureKind = end.lastFailure?.kind.rawValue
            record.finishedAt = end.finishedAt
        } else if let schedule = schedules[stored.id] {
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
