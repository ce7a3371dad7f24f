/// The time between frames as a fraction of a second, as V4L2 gives it (`struct v4l2_fract`).
public struct FrameInterval: Sendable, Hashable, Codable {
    /// Seconds per frame, numerator.
    public var numerator: UInt32
    /// Seconds per frame, denominator.
    public var denominator: UInt32

    /// `numerator`/`denominator` seconds per frame.
    public init(numerator: UInt32, denominator: UInt32) {
        self.numerator = numerator
        self.denominator = denominator
    }

    /// One frame every 1/`fps` seconds; `fps` below 1 counts as 1.
    public init(fps: Int) {
        self.init(numerator: 1, denominator: UInt32(clamping: max(fps, 1)))
    }

    /// Frames per second, or nil for a zero fraction (drivers report 0/0 when they do not know).
    public var fps: Double? {
        guard numerator > 0, denominator > 0 else { return nil }
        return Double(denominator) / Double(numerator)
    }

    /// Nanoseconds per frame, or nil for a zero fraction.
    public var nanoseconds: UInt64? {
        guard numerator > 0, denominator > 0 else { return nil }
        return UInt64(numerator) * 1_000_000_000 / UInt64(denominator)
    }
}

/// The frame rates a camera offers at one pixel format and size.
public enum FrameRates: Sendable, Equatable {
    /// A list of exact intervals (what UVC cameras report).
    case discrete([FrameInterval])
    /// Any interval between two bounds (`V4L2_FRMIVAL_TYPE_CONTINUOUS` or `_STEPWISE`;
    /// the driver rounds to its step).
    case range(fastest: FrameInterval, slowest: FrameInterval)
    /// The driver does not enumerate intervals.
    case unknown

    /// The highest rate offered, or nil when unknown.
    public var maximumFPS: Double? {
        switch self {
        case .discrete(let intervals): intervals.compactMap(\.fps).max()
        case .range(let fastest, _): fastest.fps
        case .unknown: nil
        }
    }

    /// The rates to show people: every discrete rate, highest first, or a range's two ends.
    public var framesPerSecond: [Double] {
        let rates: [Double]
        switch self {
        case .discrete(let intervals): rates = intervals.compactMap(\.fps)
        case .range(let fastest, let slowest): rates = [fastest.fps, slowest.fps].compactMap { $0 }
        case .unknown: rates = []
        }
        // Two decimals keep 30000/1001 readable as 29.97.
        var seen = Set<Double>()
        return rates.map { ($0 * 100).rounded() / 100 }.filter { seen.insert($0).inserted }.sorted(by: >)
    }

    /// The interval to ask for when `fps` is wanted: the nearest discrete rate (the faster on a
    /// tie), `fps` clamped into a range, or 1/`fps` when nothing is known.
    public func interval(closestTo fps: Int) -> FrameInterval {
        let wanted = Double(max(fps, 1))
        switch self {
        case .discrete(let intervals):
            let usable = intervals.filter { $0.fps != nil }
            guard
                let best = usable.min(by: { a, b in
                    let da = abs(a.fps! - wanted)
                    let db = abs(b.fps! - wanted)
                    return da != db ? da < db : a.fps! > b.fps!
                })
            else { return FrameInterval(fps: fps) }
            return best
        case .range(let fastest, let slowest):
            if let top = fastest.fps, wanted > top { return fastest }
            if let bottom = slowest.fps, wanted < bottom { return slowest }
            return FrameInterval(fps: fps)
        case .unknown:
            return FrameInterval(fps: fps)
        }
    }
}
