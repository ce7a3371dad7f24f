import CShutterLinux
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A dedicated OS thread for loops that block (the event loop, the capture loop, a scaler,
/// the catalog's executor), which must never run on Swift's cooperative thread pool.
public final class OSThread: @unchecked Sendable {
    // @unchecked Sendable: `handle` is written once in `spawn`, before the thread is visible
    // to anyone else; `completion` is behind its own lock.
    private var handle: UInt64 = 0
    private let completion = Completion()

    /// Whether the body has returned, and the tasks waiting for it to.
    private final class Completion: Sendable {
        private let state = LockedValue<(finished: Bool, waiters: [CheckedContinuation<Void, Never>])>(
            (false, []))
        /// Set by the one `finished()` that joins (pthread_join twice is undefined behaviour).
        private let joined = Atomic<Bool>(false)

        func claimJoin() -> Bool {
            !joined.exchange(true, ordering: .acquiringAndReleasing)
        }

        func finish() {
            let waiters = state.withLock { state in
                state.finished = true
                defer { state.waiters.removeAll() }
                return state.waiters
            }
            for waiter in waiters { waiter.resume() }
        }

        func wait() async {
            await withCheckedContinuation { continuation in
                let finished = state.withLock { state in
                    if !state.finished { state.waiters.append(continuation) }
                    return state.finished
                }
                if finished { continuation.resume() }
            }
        }
    }

    private final class Body {
        let name: String
        let run: () -> Void
        let completion: Completion
        init(name: String, run: @escaping () -> Void, completion: Completion) {
            self.name = name
            self.run = run
            self.completion = completion
        }
    }

    private init() {}

    /// Starts `body` on a new thread named `name` (shown in `top -H`).
    public static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws -> OSThread {
        let thread = OSThread()
        let context = Unmanaged.passRetained(Body(name: name, run: body, completion: thread.completion))
            .toOpaque()
        let rc = cshutter_thread_start(
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                cshutter_thread_set_name(String(body.name.prefix(15)))
                body.run()
                body.completion.finish()
                return nil
            }, context, &thread.handle)
        if rc != 0 {
            Unmanaged<Body>.fromOpaque(context).release()
            throw SystemError(errno: rc, call: "pthread_create")
        }
        return thread
    }

    /// The calling thread's name, as `spawn` set it.
    public static var currentName: String {
        var buffer = [CChar](repeating: 0, count: 32)
        cshutter_thread_get_name(&buffer, buffer.count)
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Blocks the calling thread until the thread has finished. Not for tasks: use `finished()`.
    public func join() {
        _ = cshutter_thread_join(handle)
    }

    /// Suspends the calling task, without blocking a pool thread, until the body has returned;
    /// then joins the thread, which by then is only unwinding. Any number of tasks may wait; the
    /// thread is joined once.
    public func finished() async {
        await completion.wait()
        if completion.claimJoin() { join() }
    }

    /// Lets the thread end on its own: it is never joined, and the system takes its resources
    /// back when it ends. Call at most once, and then neither `join` nor `finished`.
    public func detach() {
        _ = cshutter_thread_detach(handle)
    }
}
