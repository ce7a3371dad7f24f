import ShutterSystem

/// Decides when the sink publishes the library's state (`…/state`: pictures stored, the last
/// picture's time): at most once per interval, and once more at the end of it when pictures came
/// meanwhile, so the last state always arrives, within an interval.
///
/// Counting the pictures is a query on the catalog's thread, which snaps share: a burst of 30
/// pictures a second then costs one count a second, not thirty. Pure: the sink keeps it behind
/// a lock and passes the time.
public struct LibraryStateThrottle: Sendable, Equatable {
    public enum Decision: Sendable, Equatable {
        /// Publish it with this event.
        case publishNow
        /// Publish it at this instant (the caller schedules it, then calls `trailingPublished`).
        case publishLater(at: MonotonicInstant)
        /// A later publish is already scheduled: it will include this change.
        case alreadyScheduled
    }

    public let intervalNanoseconds: UInt64
    private var lastPublished: MonotonicInstant?
    private var trailingScheduled = false

    public init(intervalNanoseconds: UInt64 = 1_000_000_000) {
        self.intervalNanoseconds = intervalNanoseconds
    }

    /// The library changed at `now`.
    public mutating func changed(now: MonotonicInstant) -> Decision {
        if trailingScheduled { return .alreadyScheduled }
        guard let lastPublished, now.nanoseconds(since: lastPublished) < intervalNanoseconds else {
            lastPublished = now
            return .publishNow
        }
        trailingScheduled = true
        return .publishLater(at: lastPublished.advanced(by: intervalNanoseconds))
    }

    /// The scheduled publish went out at `now`.
    public mutating func trailingPublished(now: MonotonicInstant) {
        trailingScheduled = false
        lastPublished = now
    }
}
