#if canImport(Glibc)
    import Glibc
#endif

/// A value behind a pthread mutex: the lock every piece of shared state in Shutter uses.
///
/// Not `Synchronization.Mutex`: on Linux a contended `Mutex` hands the lock over through the
/// kernel (a priority-inheritance futex), which ThreadSanitizer cannot see, so every contended
/// `withLock` was reported as a data race and real races would drown among them (see
/// docs/SWIFT-ON-LINUX.md). TSan understands pthread mutexes, and uncontended they cost the same.
public final class LockedValue<State> {
    @usableFromInline let mutex: UnsafeMutablePointer<pthread_mutex_t>
    @usableFromInline var state: State

    public init(_ state: State) {
        self.state = state
        mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the lock held. Never call out, block or suspend inside it.
    // @inlinable: specialised in each caller, on the per-frame and per-request paths.
    @inlinable
    public func withLock<Result>(_ body: (inout State) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&state)
    }
}

// @unchecked Sendable: `state` is read and written only inside `withLock`, with `mutex` held. Only
// for a Sendable `State`: the lock keeps accesses apart, not a non-Sendable value from being
// shared by the threads that read it out.
extension LockedValue: @unchecked Sendable where State: Sendable {}
