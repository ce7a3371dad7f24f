/// A serial executor with a thread of its own: an actor that uses it (`unownedExecutor`) runs
/// there, never on the cooperative pool, so its blocking work (SQLite, fsync, opening devices)
/// cannot starve the tasks that serve requests. `run` hands it plain closures too.
///
/// The thread ends once the executor is released and its queue is empty.
public final class ThreadExecutor: SerialExecutor, @unchecked Sendable {
    // @unchecked Sendable: all mutable state is in `queue`, behind its lock.
    private let queue: WorkQueue

    /// Starts the thread, named `name` (at most 15 characters show in `top -H`).
    public init(name: String) throws {
        let queue = WorkQueue()
        self.queue = queue
        try OSThread.spawn(name: name) { queue.drain() }.detach()
        queue.executor = UnownedSerialExecutor(ordinary: self)
    }

    deinit { queue.close() }

    public func enqueue(_ job: consuming ExecutorJob) {
        queue.add(.job(UnownedJob(job)))
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Queues `body` to run on the executor's thread, after the work queued before it, without a
    /// task: for work handed over from a thread that must not wait (the event loop), whose result
    /// goes back the way the caller chose.
    public func submit(_ body: @escaping @Sendable () -> Void) {
        queue.add(.closure(body))
    }

    /// Runs `body` on the executor's thread, after the work queued before it, and returns its result.
    public func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.add(.closure { continuation.resume(with: Result { try body() }) })
        }
    }
}

/// The executor's queue, shared with its thread (which must not keep the executor alive).
private final class WorkQueue: @unchecked Sendable {
    // @unchecked Sendable: `executor` is written once, before any work is queued; the rest is
    // behind `state`'s lock.
    enum Work {
        case job(UnownedJob)
        case closure(@Sendable () -> Void)
    }

    private let state = LockedValue<(work: [Work], closed: Bool)>(([], false))
    private let wakeup = ThreadWakeup()
    var executor: UnownedSerialExecutor?

    func add(_ work: Work) {
        state.withLock { $0.work.append(work) }
        wakeup.signal()
    }

    func close() {
        state.withLock { $0.closed = true }
        wakeup.signal()
    }

    /// The thread's body: runs work in order until closed and empty.
    func drain() {
        while true {
            let (batch, closed) = state.withLock { state -> ([Work], Bool) in
                defer { state.work.removeAll(keepingCapacity: true) }
                return (state.work, state.closed)
            }
            for work in batch {
                switch work {
                case .job(let job): job.runSynchronously(on: executor!)
                case .closure(let body): body()
                }
            }
            if batch.isEmpty {
                if closed { return }
                _ = wakeup.wait(untilMonotonic: nil)
            }
        }
    }
}
