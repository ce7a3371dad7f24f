import ShutterSystem

/// How long each step of opening the catalog took, for the daemon's "catalog opened" log line.
///
/// Start-up with a large library is mostly the catalog's open; these say which step to look at.
public struct OpenTimings: Sendable {
    private let clock: any Clock
    private let started: MonotonicInstant
    private var lapStarted: MonotonicInstant
    /// Each step's milliseconds by its log field name, and `total_ms`.
    public private(set) var fields: [String: String] = [:]

    init(clock: any Clock) {
        self.clock = clock
        started = clock.monotonicNow()
        lapStarted = started
    }

    /// Records the time since the previous lap (or the start) as `name`, and the total so far.
    mutating func lap(_ name: String) {
        let now = clock.monotonicNow()
        fields[name] = Self.milliseconds(now.nanoseconds(since: lapStarted))
        fields["total_ms"] = Self.milliseconds(now.nanoseconds(since: started))
        lapStarted = now
    }

    /// `nanoseconds` in milliseconds with one decimal, e.g. `12.3`.
    static func milliseconds(_ nanoseconds: UInt64) -> String {
        let tenths = (nanoseconds + 50_000) / 100_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}
