import ShutterJobs
import ShutterSystem
import ShutterTestSupport
import Testing

private let second: UInt64 = 1_000_000_000

private func intervalSpec(every: UInt64 = second, end: JobSpec.IntervalEnd) -> JobSpec {
    JobSpec(kind: .interval(everyNanoseconds: every, end: end))
}

private func makeSchedule(_ spec: JobSpec, clock: ManualClock) -> JobSchedule {
    JobSchedule(spec: spec, nowWall: clock.wallMillisecondsNow(), nowMonotonic: clock.monotonicNow())
}

@Suite struct JobScheduleTests {
    @Test func intervalShotsNeverDriftOverTenThousandJitteredShots() {
        let clock = ManualClock()
        let start = clock.monotonicNow()
        var schedule = makeSchedule(intervalSpec(end: .count(10_000)), clock: clock)
        // A fixed linear congruential sequence: jitter that looks random but repeats run to run.
        var seed: UInt64 = 42
        for k in 0..<10_000 {
            let due = schedule.nextDue
            #expect(due == start.advanced(by: UInt64(k) * second))
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            clock.advance(to: due!.advanced(by: (seed >> 33) % (second - 1)))
            #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: k)])
            schedule.shotSucceeded(index: k)
        }
        #expect(schedule.advance(now: clock.monotonicNow()) == [.finished(.done)])
        #expect(schedule.taken == 10_000)
        #expect(schedule.missed == 0)
        #expect(schedule.nextDue == nil)
    }

    @Test func aStallMissesThePassedSlotsAndTakesOnlyTheLatest() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .count(10)), clock: clock)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 0)])
        schedule.shotSucceeded(index: 0)
        clock.advance(by: 3 * second + second / 2)
        #expect(
            schedule.advance(now: clock.monotonicNow()) == [.missedShots(count: 2), .takeShot(index: 3)])
        schedule.shotSucceeded(index: 3)
        #expect(schedule.advance(now: clock.monotonicNow()) == [])
        #expect(schedule.nextDue == MonotonicInstant(nanoseconds: second).advanced(by: 4 * second))
        #expect(schedule.taken == 2)
        #expect(schedule.missed == 2)
    }

    @Test func aShotIsOnTimeUntilTheNextIsDue() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .count(3)), clock: clock)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 0)])
        schedule.shotSucceeded(index: 0)
        clock.advance(by: 2 * second - 1)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 1)])
        schedule.shotSucceeded(index: 1)
        clock.advance(by: 1)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 2)])
    }

    @Test func aLateLastSlotIsMissedAndTheJobEnds() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .count(3)), clock: clock)
        _ = schedule.advance(now: clock.monotonicNow())
        schedule.shotSucceeded(index: 0)
        clock.advance(by: 10 * second)
        #expect(
            schedule.advance(now: clock.monotonicNow()) == [.missedShots(count: 2), .finished(.done)])
        #expect(schedule.state == .done)
        #expect(schedule.missed == 2)
    }

    @Test func noSecondShotWhileOneIsInFlight() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .count(5)), clock: clock)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 0)])
        clock.advance(by: second + second / 2)
        #expect(schedule.advance(now: clock.monotonicNow()) == [])
        schedule.shotSucceeded(index: 0)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 1)])
    }

    @Test func aFailedShotCountsAsMissedAndTheJobGoesOn() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .count(2)), clock: clock)
        _ = schedule.advance(now: clock.monotonicNow())
        schedule.shotFailed(index: 0, failure: ShotFailure(.storageFull, "disk full"))
        #expect(schedule.missed == 1)
        #expect(schedule.lastFailure == ShotFailure(.storageFull, "disk full"))
        clock.advance(by: second)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 1)])
        schedule.shotSucceeded(index: 1)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.finished(.done)])
    }

    @Test func aStaleShotReportIsIgnored() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .count(2)), clock: clock)
        _ = schedule.advance(now: clock.monotonicNow())
        schedule.shotSucceeded(index: 7)
        #expect(schedule.taken == 0)
    }

    @Test func aJobWithEveryShotFailedEndsFailed() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .count(1)), clock: clock)
        _ = schedule.advance(now: clock.monotonicNow())
        schedule.shotFailed(index: 0, failure: ShotFailure(.cameraUnavailable, "camera gone"))
        #expect(schedule.advance(now: clock.monotonicNow()) == [.finished(.failed)])
    }

    @Test(arguments: [
        // until 10 s after the start, every 3 s: shots at 0, 3, 6, 9.
        (JobSpec.IntervalEnd.until(wallMillis: 1_796_013_610_000), 4),
        // duration 9 s, every 3 s: a shot due exactly at the end is not taken, so 0, 3, 6.
        (.duration(nanoseconds: 9 * second), 3),
        (.count(5), 5),
    ])
    func intervalEnds(end: JobSpec.IntervalEnd, shots: Int) {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(every: 3 * second, end: end), clock: clock)
        #expect(schedule.slotCount == shots)
        var taken = 0
        while let due = schedule.nextDue {
            clock.advance(to: due)
            for action in schedule.advance(now: clock.monotonicNow()) {
                if case .takeShot(let index) = action {
                    schedule.shotSucceeded(index: index)
                    taken += 1
                }
            }
        }
        #expect(schedule.advance(now: clock.monotonicNow()) == [.finished(.done)])
        #expect(taken == shots)
        #expect(schedule.missed == 0)
    }

    @Test func unboundedRunsUntilCancelled() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .unbounded), clock: clock)
        #expect(schedule.slotCount == nil)
        for k in 0..<50 {
            clock.advance(to: schedule.nextDue!)
            #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: k)])
            schedule.shotSucceeded(index: k)
        }
        schedule.cancel()
        #expect(schedule.state == .cancelled)
    }

    @Test func cancelStopsActionsAndKeepsTakenShots() {
        let clock = ManualClock()
        var schedule = makeSchedule(intervalSpec(end: .count(10)), clock: clock)
        _ = schedule.advance(now: clock.monotonicNow())
        schedule.shotSucceeded(index: 0)
        clock.advance(by: second)
        _ = schedule.advance(now: clock.monotonicNow())
        schedule.cancel()
        // The shot already in flight still lands and counts.
        schedule.shotSucceeded(index: 1)
        clock.advance(by: 5 * second)
        #expect(schedule.advance(now: clock.monotonicNow()) == [])
        #expect(schedule.state == .cancelled)
        #expect(schedule.taken == 2)
        #expect(schedule.nextDue == nil)
        schedule.cancel()
        #expect(schedule.state == .cancelled)
    }

    @Test func startAtWaitsInScheduledState() {
        let clock = ManualClock()
        let spec = JobSpec(
            kind: .interval(everyNanoseconds: second, end: .count(2)),
            startAtWallMillis: clock.wallMillisecondsNow() + 60_000)
        var schedule = makeSchedule(spec, clock: clock)
        #expect(schedule.nextDue == clock.monotonicNow().advanced(by: 60 * second))
        clock.advance(by: 60 * second - 1)
        #expect(schedule.advance(now: clock.monotonicNow()) == [])
        #expect(schedule.state == .scheduled)
        clock.advance(by: 1)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 0)])
        #expect(schedule.state == .running)
    }

    @Test func delayedFiresOnceAndNotBefore() {
        let clock = ManualClock()
        var schedule = makeSchedule(JobSpec(kind: .delayed(delayNanoseconds: 10 * second)), clock: clock)
        let due = clock.monotonicNow().advanced(by: 10 * second)
        #expect(schedule.nextDue == due)
        clock.advance(by: 10 * second - 1)
        #expect(schedule.advance(now: clock.monotonicNow()) == [])
        // A delayed shot has no window within a run: a late advance still fires it, once.
        clock.advance(by: 30 * second)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 0)])
        schedule.shotSucceeded(index: 0)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.finished(.done)])
        #expect(schedule.advance(now: clock.monotonicNow()) == [])
        #expect(schedule.taken == 1)
    }

    @Test func burstTakesOneShotPerFrame() {
        let clock = ManualClock()
        var schedule = makeSchedule(JobSpec(kind: .burst(count: 30)), clock: clock)
        #expect(schedule.pacing == .everyFrame)
        for k in 0..<30 {
            // Frames at an uneven rate: pacing follows the frames, so none is missed.
            clock.advance(by: UInt64(20 + k % 3 * 10) * 1_000_000)
            #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: k)])
            #expect(schedule.advance(now: clock.monotonicNow()) == [])
            schedule.shotSucceeded(index: k)
        }
        #expect(schedule.advance(now: clock.monotonicNow()) == [.finished(.done)])
        #expect(schedule.taken == 30)
        #expect(schedule.missed == 0)
    }
}
