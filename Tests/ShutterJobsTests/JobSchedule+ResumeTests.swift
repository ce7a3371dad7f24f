import ShutterJobs
import ShutterSystem
import ShutterTestSupport
import Testing

private let second: UInt64 = 1_000_000_000

@Suite struct JobScheduleResumeTests {
    @Test func intervalResumesAtTheNextSlotWithTheDowntimeMissed() {
        let spec = JobSpec(kind: .interval(everyNanoseconds: 5 * second, end: .count(100)))
        let startedAtWall: Int64 = 1_796_013_600_000
        // Down from 22 s to 61.5 s: slots 5 (25 s) to 12 (60 s) passed unseen; slot 13 is at 65 s.
        let clock = ManualClock(
            monotonic: MonotonicInstant(nanoseconds: 7 * second), wallMillis: startedAtWall + 61_500)
        var schedule = JobSchedule.resume(
            spec: spec, startedAtWall: startedAtWall, takenSoFar: 4, missedSoFar: 1,
            nowWall: clock.wallMillisecondsNow(), nowMonotonic: clock.monotonicNow())
        #expect(schedule.missed == 1 + 8)
        #expect(schedule.taken == 4)
        #expect(schedule.state == .running)
        #expect(schedule.nextDue == clock.monotonicNow().advanced(by: 3_500_000_000))
        #expect(schedule.advance(now: clock.monotonicNow()) == [])
        clock.advance(to: schedule.nextDue!)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 13)])
        schedule.shotSucceeded(index: 13)
        // Later slots keep the original cadence on the new monotonic clock.
        #expect(schedule.nextDue == clock.monotonicNow().advanced(by: 5 * second))
    }

    @Test func intervalWhoseEndPassedWhileDownIsFinished() {
        let spec = JobSpec(kind: .interval(everyNanoseconds: second, end: .count(10)))
        let schedule = JobSchedule.resume(
            spec: spec, startedAtWall: 0, takenSoFar: 3, missedSoFar: 0, nowWall: 60_000,
            nowMonotonic: MonotonicInstant(nanoseconds: 5))
        #expect(schedule.state == .done)
        #expect(schedule.missed == 7)
        #expect(schedule.nextDue == nil)
    }

    @Test func delayedWhoseTimePassedIsMissedNotFired() {
        var schedule = JobSchedule.resume(
            spec: JobSpec(kind: .delayed(delayNanoseconds: 10 * second)), startedAtWall: 1_000_000,
            takenSoFar: 0, missedSoFar: 0, nowWall: 1_010_001, nowMonotonic: MonotonicInstant(nanoseconds: 1))
        #expect(schedule.state == .failed)
        #expect(schedule.missed == 1)
        #expect(schedule.advance(now: MonotonicInstant(nanoseconds: 100 * second)) == [])
    }

    @Test func delayedStillAheadFiresOnTheNewClock() {
        let clock = ManualClock(monotonic: MonotonicInstant(nanoseconds: 3 * second), wallMillis: 1_004_000)
        var schedule = JobSchedule.resume(
            spec: JobSpec(kind: .delayed(delayNanoseconds: 10 * second)), startedAtWall: 1_000_000,
            takenSoFar: 0, missedSoFar: 0, nowWall: clock.wallMillisecondsNow(),
            nowMonotonic: clock.monotonicNow())
        #expect(schedule.nextDue == MonotonicInstant(nanoseconds: 9 * second))
        clock.advance(by: 6 * second)
        #expect(schedule.advance(now: clock.monotonicNow()) == [.takeShot(index: 0)])
    }

    @Test func jobNotYetStartedResumesScheduled() {
        let spec = JobSpec(kind: .interval(everyNanoseconds: second, end: .count(3)))
        let schedule = JobSchedule.resume(
            spec: spec, startedAtWall: 120_000, takenSoFar: 0, missedSoFar: 0, nowWall: 100_000,
            nowMonotonic: MonotonicInstant(nanoseconds: second))
        #expect(schedule.state == .scheduled)
        #expect(schedule.nextDue == MonotonicInstant(nanoseconds: 21 * second))
    }

    @Test func startedBurstEndsWithTheRestMissed() {
        let schedule = JobSchedule.resume(
            spec: JobSpec(kind: .burst(count: 30)), startedAtWall: 0, takenSoFar: 12, missedSoFar: 0,
            nowWall: 5_000, nowMonotonic: MonotonicInstant(nanoseconds: 1))
        #expect(schedule.state == .done)
        #expect(schedule.missed == 18)
    }
}
