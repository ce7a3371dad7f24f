import CShutterLinux

#if canImport(Glibc)
    import Glibc
#endif

/// A dedicated OS thread for loops that block (the event loop, the capture loop),
/// which must never run on Swift's cooperative thread pool.
public final class OSThread: @unchecked Sendable {
    // Written once in `spawn` before the thread is visible to anyone else.
    private var handle: UInt64 = 0

    private final class Body {
        let name: String
        let run: () -> Void
        init(name: String, run: @escaping () -> Void) {
            self.name = name
            self.run = run
        }
    }

    private init() {}

    /// Starts `body` on a new thread named `name` (shown in `top -H`).
    public static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws -> OSThread {
        let thread = OSThread()
        let context = Unmanaged.passRetained(Body(name: name, run: body)).toOpaque()
        let rc = cshutter_thread_start(
            { raw in
                let body = Unmanaged<Body>.fromOpaque(raw!).takeRetainedValue()
                cshutter_thread_set_name(String(body.name.prefix(15)))
                body.run()
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

    /// Waits for the thread to finish.
    public func join() {
        _ = cshutter_thread_join(handle)
    }
}
