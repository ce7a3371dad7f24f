import ShutterSystem

/// Counts failed logins per client address and refuses a client that failed too often, for the
/// rest of its window: a token cannot be guessed at network speed.
///
/// Bounded: at most `maximumTrackedPeers` addresses are remembered; when full, expired windows
/// are forgotten first, then the oldest. Used from the event loop; the lock keeps it `Sendable`.
final class LoginThrottle: Sendable {
    struct Limits: Sendable {
        /// Failed attempts a client may make in one window.
        var maximumFailures = 10
        /// The window, and so the longest a refused client waits.
        var windowNanoseconds: UInt64 = 60_000_000_000
        var maximumTrackedPeers = 4096
    }

    private struct Record {
        var windowStart: MonotonicInstant
        var failures: Int
    }

    /// What `recordFailure` found.
    enum Verdict: Equatable {
        /// Under the limit: this was failure number `count` in the window.
        case counted(Int)
        /// This failure reached the limit: the client is refused from now on (log it once).
        case limitReached
    }

    let limits: Limits
    // Rule: touched only under its lock, never across a call out.
    private let records = LockedValue<[String: Record]>([:])

    init(limits: Limits = Limits()) { self.limits = limits }

    /// Seconds until `peer` may try again, or nil if it may try now.
    func retryAfter(peer: String, now: MonotonicInstant) -> Int? {
        records.withLock { records in
            guard let record = records[peer], record.failures >= limits.maximumFailures else { return nil }
            let elapsed = now.nanoseconds(since: record.windowStart)
            guard elapsed < limits.windowNanoseconds else {
                records[peer] = nil
                return nil
            }
            return Int((limits.windowNanoseconds - elapsed + 999_999_999) / 1_000_000_000)
        }
    }

    /// Counts a failed attempt by `peer`.
    func recordFailure(peer: String, now: MonotonicInstant) -> Verdict {
        records.withLock { records in
            var record = records[peer] ?? Record(windowStart: now, failures: 0)
            if now.nanoseconds(since: record.windowStart) >= limits.windowNanoseconds {
                record = Record(windowStart: now, failures: 0)
            }
            record.failures += 1
            if records[peer] == nil && records.count >= limits.maximumTrackedPeers {
                Self.makeRoom(in: &records, now: now, limits: limits)
            }
            records[peer] = record
            return record.failures >= limits.maximumFailures ? .limitReached : .counted(record.failures)
        }
    }

    /// How many addresses are remembered (tests).
    var trackedPeers: Int { records.withLock { $0.count } }

    /// Forgets expired windows, then the oldest window if that freed nothing.
    private static func makeRoom(in records: inout [String: Record], now: MonotonicInstant, limits: Limits) {
        records = records.filter { now.nanoseconds(since: $0.value.windowStart) < limits.windowNanoseconds }
        if records.count >= limits.maximumTrackedPeers,
            let oldest = records.min(by: { $0.value.windowStart < $1.value.windowStart })
        {
            records[oldest.key] = nil
        }
    }
}
