/// How long to wait before the next attempt: exponential, capped, with jitter.
///
/// The delay doubles from `initial` with each failure in a row, up to `maximum`, and is then
/// drawn from its upper half ("equal jitter"), so that several daemons whose broker came back at
/// the same moment do not all retry in step, while none retries sooner than half the schedule.
public struct RetryBackoff: Sendable, Equatable {
    public var initialNanoseconds: UInt64
    public var maximumNanoseconds: UInt64

    public init(initialNanoseconds: UInt64 = 1_000_000_000, maximumNanoseconds: UInt64 = 300_000_000_000) {
        self.initialNanoseconds = max(1, initialNanoseconds)
        self.maximumNanoseconds = max(self.initialNanoseconds, maximumNanoseconds)
    }

    /// The delay after `failures` failures in a row (1 for the first), with `unit` in [0, 1)
    /// choosing where in the upper half it falls.
    public func delay(afterFailures failures: Int, unit: Double) -> UInt64 {
        let doublings = UInt64(max(0, min(failures - 1, 40)))
        let (scaled, overflow) = initialNanoseconds.multipliedReportingOverflow(by: 1 << doublings)
        let capped = overflow ? maximumNanoseconds : min(scaled, maximumNanoseconds)
        let half = capped / 2
        return capped - half + UInt64(Double(half) * min(max(unit, 0), 0.999_999))
    }
}
