import ShutterSystem

/// A gate that request handlers wait at until the test opens it, so a test decides the order
/// in which handlers finish instead of guessing it with sleeps; the test can also wait until a
/// number of handlers have arrived (the requests have been dispatched).
public final class HandlerGate: Sendable {
    private struct State {
        var open = false
        var arrivals = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
        /// Tasks in `arrivals(atLeast:)`, each with the count it waits for.
        var arrivalWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []

        /// Records an arrival and takes the arrival waiters it satisfies.
        mutating func arrive() -> [CheckedContinuation<Void, Never>] {
            arrivals += 1
            let ready = arrivalWaiters.filter { $0.count <= arrivals }.map(\.continuation)
            arrivalWaiters.removeAll { $0.count <= arrivals }
            return ready
        }
    }

    // One lock for the state; continuations are resumed after it is released.
    private let state = LockedValue(State())
    private let arrived = ThreadWakeup()

    public init() {}

    /// Records an arrival and suspends until the gate is open (returns at once if it is).
    public func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let (isOpen, ready) = state.withLock { state -> (Bool, [CheckedContinuation<Void, Never>]) in
                let ready = state.arrive()
                if state.open { return (true, ready) }
                state.waiting.append(continuation)
                return (false, ready)
            }
            arrived.signal()
            for waiter in ready { waiter.resume() }
            if isOpen { continuation.resume() }
        }
    }

    /// Records an arrival of a handler that does not wait (an immediate one).
    public func arrive() {
        let ready = state.withLock { $0.arrive() }
        arrived.signal()
        for waiter in ready { waiter.resume() }
    }

    /// Opens the gate: every waiting handler goes on, and later ones pass at once.
    public func open() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.open = true
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Handlers that have arrived so far.
    public var arrivals: Int { state.withLock { $0.arrivals } }

    /// Returns once at least `count` handlers have arrived: for a test's task, which must not
    /// block a pool thread.
    public func arrivals(atLeast count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.arrivals >= count { return true }
                state.arrivalWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Blocks until at least `count` handlers have arrived; false if `seconds` pass first (a
    /// safety limit for a test that has failed). For a test's own thread, never the pool.
    public func waitForArrivals(_ count: Int, seconds: Int = 5) -> Bool {
        let limit = SystemClock().monotonicNow().advanced(by: UInt64(seconds) * 1_000_000_000)
        while arrivals < count {
            if !arrived.wait(untilMonotonic: limit) { return arrivals >= count }
        }
        return true
    }
}
