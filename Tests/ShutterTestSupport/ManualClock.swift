import ShutterSystem

/// A clock that only moves when a test moves it, so scheduling tests run on virtual time.
///
/// Sleepers (tasks in `sleep(until:)`, threads in `wait(for:until:)`) are woken by `advance`
/// once their deadline has passed, never by the real clock. A test that must know when the code
/// under test has gone to sleep awaits `sleepers(atLeast:)` instead of sleeping itself.
public final class ManualClock: Clock {
    private enum Sleeper {
        case task(CheckedContinuation<Void, any Error>)
        case thread(ThreadWakeup)
    }

    private struct State {
        var monotonic: UInt64
        var wallNanoseconds: Int64
        var sleepers: [UInt64: (deadline: MonotonicInstant, sleeper: Sleeper)] = [:]
        var nextSleeperID: UInt64 = 1
        /// Task sleeps cancelled before they were registered.
        var cancelledEarly: Set<UInt64> = []
        /// Tests waiting for at least this many sleepers.
        var countWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        mutating func takeID() -> UInt64 {
            defer { nextSleeperID += 1 }
            return nextSleeperID
        }

        /// The count waiters now satisfied, removed from the list.
        mutating func satisfiedCountWaiters() -> [CheckedContinuation<Void, Never>] {
            let count = sleepers.count
            let ready = countWaiters.filter { $0.count <= count }.map(\.continuation)
            countWaiters.removeAll { $0.count <= count }
            return ready
        }
    }

    // One lock for time and sleepers, so a sleeper registers and a test advances atomically
    // with respect to each other; continuations are resumed after it is released.
    private let state: LockedValue<State>

    /// A clock at the given monotonic instant and wall time (default: 2026-11-30T04:40:00Z).
    public init(
        monotonic: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000),
        wallMillis: Int64 = 1_796_013_600_000
    ) {
        state = LockedValue(State(monotonic: monotonic.nanoseconds, wallNanoseconds: wallMillis * 1_000_000))
    }

    public func monotonicNow() -> MonotonicInstant {
        state.withLock { MonotonicInstant(nanoseconds: $0.monotonic) }
    }

    public func wallMillisecondsNow() -> Int64 {
        state.withLock { $0.wallNanoseconds / 1_000_000 }
    }

    public func sleep(until deadline: MonotonicInstant) async throws {
        let id = state.withLock { $0.takeID() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Void, any Error>) in
                let (outcome, ready) = state.withLock {
                    state -> (Result<Void, any Error>?, [CheckedContinuation<Void, Never>]) in
                    if state.cancelledEarly.remove(id) != nil { return (.failure(CancellationError()), []) }
                    if deadline.nanoseconds <= state.monotonic { return (.success(()), []) }
                    state.sleepers[id] = (deadline, .task(continuation))
                    return (nil, state.satisfiedCountWaiters())
                }
                for waiter in ready { waiter.resume() }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                guard let entry = state.sleepers.removeValue(forKey: id) else {
                    state.cancelledEarly.insert(id)
                    return nil
                }
                return entry.sleeper
            }
            if case .task(let continuation) = sleeper { continuation.resume(throwing: CancellationError()) }
        }
        // A sleep that finished normally leaves no trace of its id.
        state.withLock { _ = $0.cancelledEarly.remove(id) }
    }

    public func wait(for wakeup: ThreadWakeup, until deadline: MonotonicInstant?) -> Bool {
        guard let deadline else { return wakeup.wait(untilMonotonic: nil) }
        let (id, ready) = state.withLock { state -> (UInt64?, [CheckedContinuation<Void, Never>]) in
            if deadline.nanoseconds <= state.monotonic {
                wakeup.expire()
                return (nil, [])
            }
            let id = state.takeID()
            state.sleepers[id] = (deadline, .thread(wakeup))
            return (id, state.satisfiedCountWaiters())
        }
        for waiter in ready { waiter.resume() }
        let signalled = wakeup.wait(untilMonotonic: nil)
        if let id {
            state.withLock { state in
                // Gone from the list: `advance` expired it, perhaps after a signal had already
                // ended the wait; that expiry must not end the next wait too.
                if state.sleepers.removeValue(forKey: id) == nil { wakeup.resetExpiry() }
            }
        }
        return signalled
    }

    /// Moves both clocks forward by `nanoseconds`, waking every sleeper whose deadline has passed.
    public func advance(by nanoseconds: UInt64) {
        let due = state.withLock { state -> [Sleeper] in
            state.monotonic += nanoseconds
            state.wallNanoseconds += Int64(nanoseconds)
            let now = state.monotonic
            let ids = state.sleepers.filter { $0.value.deadline.nanoseconds <= now }.map(\.key)
            return ids.compactMap { id in
                let sleeper = state.sleepers.removeValue(forKey: id)?.sleeper
                // Expired under the lock, so a thread that finds its entry gone knows the expiry is set.
                if case .thread(let wakeup) = sleeper { wakeup.expire() }
                return sleeper
            }
        }
        for sleeper in due {
            if case .task(let continuation) = sleeper { continuation.resume() }
        }
    }

    /// Moves both clocks forward to the monotonic instant `deadline` (no-op if it is past).
    public func advance(to deadline: MonotonicInstant) {
        advance(by: deadline.nanoseconds(since: monotonicNow()))
    }

    /// Sets the wall clock alone, as an NTP step or an operator would.
    public func setWall(millis: Int64) {
        state.withLock { $0.wallNanoseconds = millis * 1_000_000 }
    }

    /// Tasks and threads now asleep on this clock with a deadline.
    public var sleeperCount: Int { state.withLock { $0.sleepers.count } }

    /// The earliest deadline anyone sleeps until, if anyone sleeps.
    public var nextDeadline: MonotonicInstant? {
        state.withLock { $0.sleepers.values.map(\.deadline).min() }
    }

    /// Returns once at least `count` tasks or threads sleep on this clock with a deadline: the
    /// code under test has reached its wait, so advancing now wakes it.
    public func sleepers(atLeast count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.sleepers.count >= count { return true }
                state.countWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }
}
