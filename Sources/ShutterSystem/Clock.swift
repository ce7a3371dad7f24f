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
/// so tests can run on virtual time.
public protocol Clock: Sendable {
    /// Now on the monotonic clock (never jumps; use for intervals and deadlines).
    func monotonicNow() -> MonotonicInstant
    /// Now on the wall clock, in milliseconds since 1970-01-01 UTC (use for timestamps shown to people).
    func wallMillisecondsNow() -> Int64
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

    /// Sleeps the calling thread until `deadline` on the monotonic clock.
    public static func sleep(until deadline: MonotonicInstant) {
        var ts = timespec(
            tv_sec: Int(deadline.nanoseconds / 1_000_000_000),
            tv_nsec: Int(deadline.nanoseconds % 1_000_000_000))
        while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
    }
}
