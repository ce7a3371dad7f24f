#if canImport(Glibc)
    import Glibc
#endif

/// Wakes one blocked thread: a flag, a mutex and a condition variable on `CLOCK_MONOTONIC`.
///
/// The thread that owns a loop waits on it (through `Clock.wait(for:until:)`); any thread may
/// `signal()` it. A signal given while nobody waits is kept until the next wait, so a wake-up is
/// never lost between checking for work and going to sleep.
public final class ThreadWakeup: @unchecked Sendable {
    // @unchecked Sendable: `signalled` and `expired` are read and written only with `mutex` held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var signalled = false
    private var expired = false

    public init() {
        pthread_mutex_init(mutex, nil)
        var attributes = pthread_condattr_t()
        pthread_condattr_init(&attributes)
        // Deadlines are monotonic instants: a wall-clock step must not stretch or cut a wait.
        pthread_condattr_setclock(&attributes, CLOCK_MONOTONIC)
        pthread_cond_init(condition, &attributes)
        pthread_condattr_destroy(&attributes)
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    /// Wakes the waiting thread, or the next one to wait.
    public func signal() {
        pthread_mutex_lock(mutex)
        signalled = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Ends the current or next wait as if its deadline had passed, without counting as a signal.
    /// For virtual clocks, which decide themselves when a deadline has passed.
    public func expire() {
        pthread_mutex_lock(mutex)
        expired = true
        pthread_cond_signal(condition)
        pthread_mutex_unlock(mutex)
    }

    /// Forgets an `expire()` that came after the wait it was meant for had already ended.
    public func resetExpiry() {
        pthread_mutex_lock(mutex)
        expired = false
        pthread_mutex_unlock(mutex)
    }

    /// Blocks until signalled, expired, or the system monotonic clock reaches `deadline`;
    /// returns whether it was signalled. Consumes the signal.
    public func wait(untilMonotonic deadline: MonotonicInstant?) -> Bool {
        var limit = deadline.map {
            timespec(
                tv_sec: Int($0.nanoseconds / 1_000_000_000), tv_nsec: Int($0.nanoseconds % 1_000_000_000))
        }
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !signalled && !expired {
            if limit == nil {
                pthread_cond_wait(condition, mutex)
            } else if pthread_cond_timedwait(condition, mutex, &limit!) == ETIMEDOUT {
                break
            }
        }
        let wasSignalled = signalled
        signalled = false
        expired = false
        return wasSignalled
    }
}
