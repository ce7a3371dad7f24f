import ShutterSystem

extension JobSchedule {
    /// Rebuilds an unfinished job after a restart, from what was persisted and the new run's clocks.
    ///
    /// Wall time is the only clock that survives a restart: the monotonic clock's origin is
    /// arbitrary and resets at boot. So the persisted wall start is mapped onto the new run's
    /// monotonic clock once, here, by the wall distance between that start and `nowWall`; within a
    /// run only monotonic time is used, so wall-clock steps (NTP, a changed time zone) never move shots.
    ///
    /// Slots that fell due while the daemon was down are added to `missed`, never taken late: an
    /// interval job resumes at its first slot not yet past, a delayed job whose time passed ends
    /// `.failed` with its shot missed, and a burst that had begun ends with its remaining shots missed.
    ///
    /// `lastFailure` is the one persisted with the job, kept until a newer shot fails.
    public static func resume(
        spec: JobSpec, startedAtWall: Int64, takenSoFar: Int, missedSoFar: Int,
        lastFailure: ShotFailure? = nil,
        nowWall: Int64, nowMonotonic: MonotonicInstant
    ) -> JobSchedule {
        var schedule = resumedCounts(
            spec: spec, startedAtWall: startedAtWall, takenSoFar: takenSoFar, missedSoFar: missedSoFar,
            nowWall: nowWall, nowMonotonic: nowMonotonic)
        schedule.lastFailure = lastFailure
        return schedule
    }

    private static func resumedCounts(
        spec: JobSpec, startedAtWall: Int64, takenSoFar: Int, missedSoFar: Int, nowWall: Int64,
        nowMonotonic: MonotonicInstant
    ) -> JobSchedule {
        let handled = takenSoFar + missedSoFar
        if startedAtWall >= nowWall {
            let start = nowMonotonic.advanced(by: UInt64(nanosecondsInMillis: startedAtWall - nowWall))
            var schedule = JobSchedule(spec: spec, startedAtWall: startedAtWall, anchor: start, anchorSlot: 0)
            schedule.restore(taken: takenSoFar, missed: missedSoFar, nextSlot: handled, passed: 0)
            return schedule
        }
        let elapsed = UInt64(nanosecondsInMillis: nowWall - startedAtWall)
        switch spec.kind {
        case .interval(let every, _):
            // The first slot not yet past: a slot due exactly now can still be taken.
            let next = slots(in: elapsed, step: every)
            let untilNext = elapsed % every == 0 ? 0 : every - elapsed % every
            var schedule = JobSchedule(
                spec: spec, startedAtWall: startedAtWall, anchor: nowMonotonic.advanced(by: untilNext),
                anchorSlot: next)
            let passed = max(min(next, schedule.slotCount ?? Int.max) - handled, 0)
            schedule.restore(
                taken: takenSoFar, missed: missedSoFar, nextSlot: max(handled, next), passed: passed)
            return schedule
        case .delayed(let delay):
            let dueWall = startedAtWall + Int64(delay / 1_000_000)
            let untilDue = UInt64(nanosecondsInMillis: dueWall - nowWall)
            // The anchor is the start; the initializer adds the delay back.
            let anchor = MonotonicInstant(nanoseconds: nowMonotonic.nanoseconds &+ untilDue &- delay)
            var schedule = JobSchedule(
                spec: spec, startedAtWall: startedAtWall, anchor: anchor, anchorSlot: 0)
            let passed = dueWall < nowWall ? max(1 - handled, 0) : 0
            schedule.restore(
                taken: takenSoFar, missed: missedSoFar, nextSlot: handled + passed, passed: passed)
            return schedule
        case .burst(let count):
            var schedule = JobSchedule(
                spec: spec, startedAtWall: startedAtWall, anchor: nowMonotonic, anchorSlot: 0)
            let passed = max(count - handled, 0)
            schedule.restore(taken: takenSoFar, missed: missedSoFar, nextSlot: count, passed: passed)
            return schedule
        }
    }
}
