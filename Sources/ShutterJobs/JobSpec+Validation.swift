extension JobSpec {
    /// Checks the spec against `limits` and the camera's frame interval, throwing the first problem found.
    ///
    /// With `nowWallMillis`, a `start_at` or `until` already in the past is refused too.
    public func validate(
        limits: JobLimits, frameIntervalNanoseconds: UInt64, nowWallMillis: Int64? = nil
    ) throws(JobSpecError) {
        if let label, label.utf8.count > limits.maxLabelBytes {
            throw .invalidValue(field: "label", accepted: "at most \(limits.maxLabelBytes) bytes long")
        }
        if let startAtWallMillis, let nowWallMillis, startAtWallMillis < nowWallMillis {
            throw .invalidValue(field: "start_at", accepted: "a time in the future, or absent to start now")
        }
        switch kind {
        case .delayed:
            break
        case .burst(let count):
            try Self.checkCount(count, limits: limits)
        case .interval(let every, let end):
            if every < max(frameIntervalNanoseconds, 1) {
                throw .invalidValue(
                    field: "every",
                    accepted:
                        "at least the camera's frame interval (\(Self.seconds(frameIntervalNanoseconds)) s); use a burst job for every frame"
                )
            }
            switch end {
            case .count(let count):
                try Self.checkCount(count, limits: limits)
            case .until(let wallMillis):
                let start = startAtWallMillis ?? nowWallMillis
                if let start, wallMillis <= start {
                    throw .invalidValue(field: "until", accepted: "later than the job's start")
                }
                try Self.checkSlots(
                    start.map { UInt64(nanosecondsInMillis: wallMillis - $0) }, every: every, field: "until",
                    limits: limits)
            case .duration(let nanoseconds):
                if nanoseconds == 0 {
                    throw .invalidValue(field: "duration", accepted: "a positive number of seconds")
                }
                try Self.checkSlots(nanoseconds, every: every, field: "duration", limits: limits)
            case .unbounded:
                if !limits.allowsUnbounded {
                    throw .invalidValue(
                        field: "count",
                        accepted:
                            "given (or `until` or `duration`), since interval jobs may not run until cancelled"
                    )
                }
            }
        }
    }

    private static func checkCount(_ count: Int, limits: JobLimits) throws(JobSpecError) {
        if count < 1 || count > limits.maxCount {
            throw .invalidValue(field: "count", accepted: "a whole number from 1 to \(limits.maxCount)")
        }
    }

    // An until or duration end is a count in disguise, so it is held to the same maximum.
    private static func checkSlots(
        _ span: UInt64?, every: UInt64, field: String, limits: JobLimits
    ) throws(JobSpecError) {
        guard let span else { return }
        let slots = span / every + (span % every == 0 ? 0 : 1)
        if slots > UInt64(limits.maxCount) {
            throw .invalidValue(
                field: field,
                accepted: "short enough for at most \(limits.maxCount) shots at the given `every`")
        }
    }

    private static func seconds(_ nanoseconds: UInt64) -> String {
        let millis = (nanoseconds + 500_000) / 1_000_000
        let fraction = String(millis % 1000)
        return "\(millis / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
