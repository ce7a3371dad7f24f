import ShutterSystem
import ShutterTestSupport
import Synchronization
import Testing

/// The virtual clock every scheduling test relies on: sleepers wake when, and only when, it is advanced.
// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct ManualClockTests {
    @Test func aTaskSleepEndsWhenTheClockPassesItsDeadline() async throws {
        let clock = ManualClock()
        let deadline = clock.monotonicNow().advanced(by: 1_000_000_000)
        let woke = Atomic<Bool>(false)
        let sleeper = Task {
            try await clock.sleep(until: deadline)
            woke.store(true, ordering: .relaxed)
        }
        await clock.sleepers(atLeast: 1)
        clock.advance(by: 999_999_999)
        #expect(clock.sleeperCount == 1)
        let wokeEarly = woke.load(ordering: .relaxed)
        #expect(!wokeEarly)
        clock.advance(by: 1)
        try await sleeper.value
        let wokeAfter = woke.load(ordering: .relaxed)
        #expect(wokeAfter)
        #expect(clock.sleeperCount == 0)
    }

    @Test func aPastDeadlineReturnsAtOnce() async throws {
        let clock = ManualClock()
        try await clock.sleep(until: clock.monotonicNow())
        #expect(clock.sleeperCount == 0)
    }

    @Test func cancellingASleepThrowsAndForgetsIt() async {
        let clock = ManualClock()
        let sleeper = Task { try await clock.sleep(until: clock.monotonicNow().advanced(by: 60_000_000_000)) }
        await clock.sleepers(atLeast: 1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func aSleepCancelledBeforeItStartsThrows() async {
        let clock = ManualClock()
        let sleeper = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await clock.sleep(until: clock.monotonicNow().advanced(by: 60_000_000_000))
        }
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        #expect(clock.sleeperCount == 0)
    }

    @Test func aThreadWaitEndsAtItsDeadlineOrAtASignal() async throws {
        let clock = ManualClock()
        let wakeup = ThreadWakeup()
        let outcomes = LockedValue<[Bool]>([])
        let thread = try OSThread.spawn(name: "test-waiter") {
            let now = clock.monotonicNow()
            outcomes.withLock { $0.append(clock.wait(for: wakeup, until: now.advanced(by: 500_000_000))) }
            outcomes.withLock { $0.append(clock.wait(for: wakeup, until: now.advanced(by: 60_000_000_000))) }
        }
        await clock.sleepers(atLeast: 1)
        clock.advance(by: 500_000_000)
        await clock.sleepers(atLeast: 1)
        wakeup.signal()
        await thread.finished()
        #expect(outcomes.withLock { $0 } == [false, true])
        #expect(clock.sleeperCount == 0)
    }

    @Test func aSignalGivenBeforeTheWaitIsNotLost() {
        let wakeup = ThreadWakeup()
        wakeup.signal()
        #expect(ManualClock().wait(for: wakeup, until: nil))
        #expect(SystemClock().wait(for: wakeup, until: SystemClock().monotonicNow()) == false)
    }

    @Test func nextDeadlineIsTheEarliestSleepersDeadline() async throws {
        let clock = ManualClock()
        let start = clock.monotonicNow()
        let late = Task { try await clock.sleep(until: start.advanced(by: 9_000)) }
        let early = Task { try await clock.sleep(until: start.advanced(by: 4_000)) }
        await clock.sleepers(atLeast: 2)
        #expect(clock.nextDeadline == start.advanced(by: 4_000))
        clock.advance(to: start.advanced(by: 4_000))
        try await early.value
        #expect(clock.nextDeadline == start.advanced(by: 9_000))
        late.cancel()
        _ = try? await late.value
    }
}
