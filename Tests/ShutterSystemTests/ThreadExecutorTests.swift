import ShutterSystem
import Synchronization
import Testing

/// An actor on a thread of its own, the way the catalog runs SQLite off the cooperative pool.
private actor ThreadBoundCounter {
    nonisolated let executor: ThreadExecutor
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
    private var count = 0

    init(executor: ThreadExecutor) { self.executor = executor }

    func increment() -> (count: Int, thread: String) {
        count += 1
        return (count, OSThread.currentName)
    }
}

// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct ThreadExecutorTests {
    @Test func anActorOnTheExecutorRunsOnItsThreadInOrder() async throws {
        let counter = ThreadBoundCounter(executor: try ThreadExecutor(name: "test-serial"))
        var counts: [Int] = []
        for _ in 0..<50 {
            let (count, thread) = await counter.increment()
            #expect(thread == "test-serial")
            counts.append(count)
        }
        #expect(counts == Array(1...50))
    }

    @Test func runHandsBackTheResultOrTheError() async throws {
        let executor = try ThreadExecutor(name: "test-run")
        #expect(try await executor.run { OSThread.currentName } == "test-run")
        await #expect(throws: SystemError.self) {
            try await executor.run { throw SystemError(errno: 5, call: "test") }
        }
    }

    /// More waiters than the pool has threads, each on a thread that ends only when this test,
    /// itself a task on the pool, lets it: if `finished()` blocked a pool thread, the test could
    /// never get to the releases, and the time limit would fail it.
    @Test func finishedWaitsForTheBodyWithoutBlockingThePool() async throws {
        let count = 8
        let wakeups = (0..<count).map { _ in ThreadWakeup() }
        let done = Atomic<Int>(0)
        let threads = try wakeups.map { wakeup in
            try OSThread.spawn(name: "test-finish") {
                _ = wakeup.wait(untilMonotonic: nil)
                done.add(1, ordering: .relaxed)
            }
        }
        let waiters = threads.map { thread in Task { await thread.finished() } }
        for _ in 0..<count { await Task.yield() }
        for wakeup in wakeups { wakeup.signal() }
        for waiter in waiters { await waiter.value }
        let finished = done.load(ordering: .relaxed)
        #expect(finished == count)
    }
}
