import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A `SerialQueue` that runs nothing until the test says so: it stands in for the event loop,
/// so a test can hold the loop "busy" and see what piles up meanwhile.
public final class ManualSerialQueue: SerialQueue {
    private struct State {
        var tasks: [@Sendable () -> Void] = []
        /// The thread inside `runPending`, or 0.
        var runningThread: UInt = 0
        /// Tests waiting for at least this many queued tasks.
        var countWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    // Guards the queue; tasks run after it is released, so they may queue more.
    private let state = LockedValue(State())

    public init() {}

    public func execute(_ task: @escaping @Sendable () -> Void) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.tasks.append(task)
            let count = state.tasks.count
            let ready = state.countWaiters.filter { $0.count <= count }.map(\.continuation)
            state.countWaiters.removeAll { $0.count <= count }
            return ready
        }
        for waiter in ready { waiter.resume() }
    }

    /// Returns once at least `count` tasks are queued (another thread has handed work over).
    public func tasks(atLeast count: Int) async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.tasks.count >= count { return true }
                state.countWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public var isCurrent: Bool {
        state.withLock { $0.runningThread != 0 && pthread_equal($0.runningThread, pthread_self()) != 0 }
    }

    /// Tasks queued and not yet run.
    public var pendingCount: Int { state.withLock { $0.tasks.count } }

    /// Runs queued tasks, and those they queue, until none is left; returns how many ran.
    @discardableResult
    public func runPending() -> Int {
        state.withLock { $0.runningThread = pthread_self() }
        defer { state.withLock { $0.runningThread = 0 } }
        var ran = 0
        while true {
            let tasks = state.withLock { state in
                defer { state.tasks.removeAll() }
                return state.tasks
            }
            if tasks.isEmpty { return ran }
            for task in tasks { task() }
            ran += tasks.count
        }
    }

    /// Runs `body` as if on the queue's thread (`isCurrent` is true meanwhile).
    public func runOnQueue<T>(_ body: () throws -> T) rethrows -> T {
        state.withLock { $0.runningThread = pthread_self() }
        defer { state.withLock { $0.runningThread = 0 } }
        return try body()
    }
}
