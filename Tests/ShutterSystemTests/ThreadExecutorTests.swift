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

    @Test func finishedWaitsForTheBodyWithoutBlockingThePool() async throws {
        let wakeup = ThreadWakeup()
        let done = Atomic<Bool>(false)
        let thread = try OSThread.spawn(name: "test-finish") {
            _ = wakeup.wait(untilMonotonic: nil)
            done.store(true, ordering: .relaxed)
        }
        wakeup.signal()
        await thread.finished()
        let finished = done.load(ordering: .relaxed)
        #expect(finished)
    }
}
