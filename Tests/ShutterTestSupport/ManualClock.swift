import ShutterSystem
import Synchronization

/// A clock that only moves when a test moves it, so scheduling tests run on virtual time.
public final class ManualClock: Clock {
    private struct Now {
        var monotonic: UInt64
        var wallNanoseconds: Int64
    }

    // Tests may read the clock from several tasks; the mutex is the only guard it needs.
    private let now: Mutex<Now>

    /// A clock at the given monotonic instant and wall time (default: 2026-11-30T04:40:00Z).
    public init(
        monotonic: MonotonicInstant = MonotonicInstant(nanoseconds: 1_000_000_000),
        wallMillis: Int64 = 1_796_013_600_000
    ) {
        now = Mutex(Now(monotonic: monotonic.nanoseconds, wallNanoseconds: wallMillis * 1_000_000))
    }

    public func monotonicNow() -> MonotonicInstant {
        now.withLock { MonotonicInstant(nanoseconds: $0.monotonic) }
    }

    public func wallMillisecondsNow() -> Int64 {
        now.withLock { $0.wallNanoseconds / 1_000_000 }
    }

    /// Moves both clocks forward by `nanoseconds`.
    public func advance(by nanoseconds: UInt64) {
        now.withLock {
            $0.monotonic += nanoseconds
            $0.wallNanoseconds += Int64(nanoseconds)
        }
    }

    /// Moves both clocks forward to the monotonic instant `deadline` (no-op if it is past).
    public func advance(to deadline: MonotonicInstant) {
        advance(by: deadline.nanoseconds(since: monotonicNow()))
    }

    /// Sets the wall clock alone, as an NTP step or an operator would.
    public func setWall(millis: Int64) {
        now.withLock { $0.wallNanoseconds = millis * 1_000_000 }
    }
}
