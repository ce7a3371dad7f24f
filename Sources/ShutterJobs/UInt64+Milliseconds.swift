extension UInt64 {
    /// Nanoseconds in `millis` milliseconds: 0 if negative, saturating at the maximum.
    ///
    /// Wall times come from clients and from a clock that can be set anywhere, so their
    /// differences must not trap on overflow.
    init(nanosecondsInMillis millis: Int64) {
        guard millis > 0 else {
            self = 0
            return
        }
        let (product, overflow) = UInt64(millis).multipliedReportingOverflow(by: 1_000_000)
        self = overflow ? .max : product
    }
}
