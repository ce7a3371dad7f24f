#if canImport(Glibc)
    import Glibc
#endif

/// A point on the monotonic clock, in nanoseconds since an arbitrary origin.
public struct MonotonicInstant: Comparable, Hashable, Sendable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    /// The instant `nanoseconds` later.
    public func advanced(by nanoseconds: UInt64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: self.nanoseconds &+ nanoseconds)
    }

    /// Nanoseconds from `earlier` to this instant, or 0 if `earlier` is later.
    public func nanoseconds(since earlier: MonotonicInstant) -> UInt64 {
        nanoseconds > earlier.nanoseconds ? nanoseconds - earlier.nanoseconds : 0
    }
}

/// The clock seam: scheduling and timing logic asks this, never the OS directly,
/// so tests can run on virtual time (`ManualClock` in the test-support target).
///
/// Both kinds of waiting go through it: tasks `sleep(until:)`, and threads that must not
/// run on the cooperative pool (the capture loop, a scaler) `wait(for:until:)`, so a test that
/// advances the clock wakes every sleeper whose deadline has passed.
public protocol Clock: Sendable {
    /// Now on the monotonic clock (never jumps; use for intervals and deadlines).
    func monotonicNow() -> MonotonicInstant
    /// Now on the wall clock, in milliseconds since 1970-01-01 UTC (use for timestamps shown to people).
    func wallMillisecondsNow() -> Int64
    /// Suspends the calling task until `deadline` on the monotonic clock.
    ///
    /// Throws `CancellationError` as soon as the task is cancelled.
    func sleep(until deadline: MonotonicInstant) async throws
    /// Blocks the calling thread until `wakeup` is signalled or, if `deadline` is given, the
    /// monotonic clock reaches it; returns whether it was signalled (and consumes the signal).
    ///
    /// For dedicated threads only: a task on the cooperative pool must never block.
    func wait(for wakeup: ThreadWakeup, until deadline: MonotonicInstant?) -> Bool
}

/// The operating system's clocks (`CLOCK_MONOTONIC` and `CLOCK_REALTIME`).
public struct SystemClock: Clock {
    public init() {}

    public func monotonicNow() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }

    public func wallMillisecondsNow() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    public func sleep(until deadline: MonotonicInstant) async throws {
        let delay = deadline.nanoseconds(since: monotonicNow())
        if delay > 0 { try await Task.sleep(nanoseconds: delay) }
        try Task.checkCancellation()
    }

    public func wait(for wakeup: ThreadWakeup, until deadline: MonotonicInstant?) -> Bool {
        wakeup.wait(untilMonotonic: deadline)
    }
}
