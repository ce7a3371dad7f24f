import ShutterSystem

/// The pure state machine behind one capture job: it decides when shots are due and which were missed.
///
/// The owner calls `advance(now:)` when `nextDue` arrives (and, for a burst, on every camera frame),
/// carries out the returned actions, reports each shot with `shotSucceeded`/`shotFailed`, and calls
/// `advance(now:)` again. At most one shot is in flight at a time.
///
/// Timed jobs never drift: shot k is due at start + k × every on the monotonic clock, whatever the
/// lateness of earlier shots. A shot due at t may be taken until t + every (exclusive); when
/// `advance` comes later than that, every slot that has passed is missed except the latest due one,
/// which is taken now, so a stall never produces a catch-up burst. A delayed job's single shot has
/// no such window within one run: it fires on the first `advance` at or after its due time.
///
/// A burst is paced by frames, not by time (`Pacing.everyFrame`): from its start, each `advance`
/// with no shot in flight takes the next shot, so the owner calling it once per delivered frame
/// gets one shot per frame at whatever rate the camera really runs. Its only missed shots are failed ones.
public struct JobSchedule: Sendable {
    /// How a job's shots are paced.
    public enum Pacing: Sendable, Equatable {
        /// Shots fall due at instants on the monotonic clock.
        case timed
        /// Shots are taken one per camera frame from the start.
        case everyFrame
    }

    /// What the job was asked to do.
    public let spec: JobSpec
    /// The wall time (ms) the job's slots count from; persist it, it is what `resume` needs.
    public let startedAtWall: Int64
    /// How many shots the job takes at most, or nil if it runs until cancelled.
    public let slotCount: Int?
    /// How shots are paced.
    public let pacing: Pacing
    /// Where the job is in its life.
    public private(set) var state: JobState
    /// Shots taken and saved.
    public private(set) var taken: Int
    /// Shots skipped because they could not be taken on time, or that failed.
    public private(set) var missed: Int
    /// Why the most recent failed shot failed.
    public internal(set) var lastFailure: ShotFailure?

    // Slot k is due at anchor + (k - anchorSlot) × step; a resumed schedule anchors at a slot
    // after 0 because slot 0 may lie before the new run's monotonic origin.
    private let anchor: MonotonicInstant
    private let anchorSlot: Int
    // Nanoseconds between slots; 0 for a delayed job's single slot and for a burst.
    private let step: UInt64
    // The first slot not yet taken or missed.
    private var nextSlot: Int
    // The shot handed out by `takeShot` and not yet reported.
    private var inFlight: Int?

    /// A new job created at `nowWall`/`nowMonotonic`; it starts at `spec.startAtWallMillis`, or now
    /// if that is absent or already past.
    public init(spec: JobSpec, nowWall: Int64, nowMonotonic: MonotonicInstant) {
        let startWall = max(spec.startAtWallMillis ?? nowWall, nowWall)
        let start = nowMonotonic.advanced(by: UInt64(nanosecondsInMillis: startWall - nowWall))
        self.init(spec: spec, startedAtWall: startWall, anchor: start, anchorSlot: 0)
    }

    // Internal so `resume` can build a schedule anchored after slot 0.
    init(spec: JobSpec, startedAtWall: Int64, anchor: MonotonicInstant, anchorSlot: Int) {
        self.spec = spec
        self.startedAtWall = startedAtWall
        self.anchorSlot = anchorSlot
        self.state = .scheduled
        self.taken = 0
        self.missed = 0
        self.nextSlot = 0
        switch spec.kind {
        case .delayed(let delay):
            self.anchor = anchor.advanced(by: delay)
            self.step = 0
            self.slotCount = 1
            self.pacing = .timed
        case .burst(let count):
            self.anchor = anchor
            self.step = 0
            self.slotCount = count
            self.pacing = .everyFrame
        case .interval(let every, let end):
            self.anchor = anchor
            self.step = every
            self.pacing = .timed
            switch end {
            case .count(let n):
                self.slotCount = n
            case .until(let wallMillis):
                let span = UInt64(nanosecondsInMillis: wallMillis - startedAtWall)
                self.slotCount = Self.slots(in: span, step: every)
            case .duration(let nanoseconds):
                self.slotCount = Self.slots(in: nanoseconds, step: every)
            case .unbounded:
                self.slotCount = nil
            }
        }
    }

    /// When the next shot is due (for a burst: from when shots are taken per frame), or nil if none is.
    public var nextDue: MonotonicInstant? {
        guard !state.isFinal, nextSlot < (slotCount ?? Int.max) else { return nil }
        return pacing == .everyFrame ? anchor : due(nextSlot)
    }

    /// The actions due at `now`: missed shots to record, a shot to take, or the end of the job.
    public mutating func advance(now: MonotonicInstant) -> [JobAction] {
        guard !state.isFinal, inFlight == nil else { return [] }
        let limit = slotCount ?? Int.max
        guard nextSlot < limit else { return [finish()] }
        if pacing == .everyFrame {
            guard now >= anchor else { return [] }
            return [take(nextSlot)]
        }
        guard now >= due(nextSlot) else { return [] }
        var latest: Int
        if step == 0 {
            latest = nextSlot
        } else {
            let elapsed = Int(clamping: now.nanoseconds(since: anchor) / step)
            latest = min(anchorSlot + elapsed, limit - 1)
        }
        var skipped = latest - nextSlot
        // The last slot has no successor to bound its window, so it closes after one step like the rest.
        let late = step > 0 && now >= due(latest).advanced(by: step)
        if late { skipped += 1 }
        var actions: [JobAction] = []
        if skipped > 0 {
            missed += skipped
            actions.append(.missedShots(count: skipped))
        }
        if late {
            nextSlot = latest + 1
            actions.append(finish())
        } else {
            actions.append(take(latest))
        }
        return actions
    }

    /// Records that shot `index` was taken; a report for any other shot is ignored.
    public mutating func shotSucceeded(index: Int) {
        guard inFlight == index else { return }
        inFlight = nil
        taken += 1
    }

    /// Records that shot `index` failed: it counts as missed and the job goes on.
    public mutating func shotFailed(index: Int, failure: ShotFailure) {
        guard inFlight == index else { return }
        inFlight = nil
        missed += 1
        lastFailure = failure
    }

    /// Stops the job; a shot already in flight may still be reported and counted.
    public mutating func cancel() {
        guard !state.isFinal else { return }
        state = .cancelled
    }

    // Applies persisted counts and the slots that passed while the daemon was down.
    mutating func restore(taken: Int, missed: Int, nextSlot: Int, passed: Int) {
        self.taken = taken
        self.missed = missed + passed
        self.nextSlot = nextSlot
        if taken + missed > 0 || passed > 0 { state = .running }
        if nextSlot >= (slotCount ?? Int.max) { state = self.taken > 0 ? .done : .failed }
    }

    private mutating func take(_ index: Int) -> JobAction {
        state = .running
        nextSlot = index + 1
        inFlight = index
        return .takeShot(index: index)
    }

    private mutating func finish() -> JobAction {
        state = taken > 0 ? .done : .failed
        return .finished(state)
    }

    private func due(_ slot: Int) -> MonotonicInstant {
        let (offset, overflow) = UInt64(max(slot - anchorSlot, 0)).multipliedReportingOverflow(by: step)
        return anchor.advanced(by: overflow ? UInt64.max - anchor.nanoseconds : offset)
    }

    // Slots k with k × step < span: a shot due exactly at the end is not taken.
    static func slots(in span: UInt64, step: UInt64) -> Int {
        Int(clamping: span / step + (span % step == 0 ? 0 : 1))
    }
}
