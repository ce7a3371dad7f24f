import Synchronization

/// A histogram of durations with fixed bucket bounds, for Prometheus: any thread observes, any
/// thread reads. Observing is a few relaxed atomic adds, cheap enough for every frame and every
/// request.
public final class LatencyHistogram: Sendable {
    /// Upper bounds of the buckets, in seconds, ascending (the `+Inf` bucket is implied).
    public let bounds: [Double]
    private let boundsNanoseconds: [UInt64]
    // Relaxed atomics: a scrape may see an observation in one bucket before the sum: a
    // histogram read while it is written is off by at most the observations in flight.
    private let buckets: [AtomicCounter]
    private let sumNanoseconds = Atomic<UInt64>(0)
    private let total = Atomic<UInt64>(0)

    /// From 0.1 ms to 10 s: an encode takes milliseconds, a snap tens of them, a slow request seconds.
    public static let defaultBounds: [Double] = [
        0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]

    public init(bounds: [Double] = LatencyHistogram.defaultBounds) {
        self.bounds = bounds
        boundsNanoseconds = bounds.map { UInt64($0 * 1e9) }
        buckets = bounds.map { _ in AtomicCounter() }
    }

    /// Counts one duration of `nanoseconds`.
    public func observe(nanoseconds: UInt64) {
        // Only the first bucket that holds it: the cumulative counts are summed when read.
        if let index = boundsNanoseconds.firstIndex(where: { nanoseconds <= $0 }) {
            buckets[index].add()
        }
        sumNanoseconds.add(nanoseconds, ordering: .relaxed)
        total.add(1, ordering: .relaxed)
    }

    /// The cumulative count at each bound, the count of all observations, and their sum in seconds.
    public var snapshot: (cumulative: [UInt64], count: UInt64, sumSeconds: Double) {
        var running: UInt64 = 0
        let cumulative = buckets.map { bucket -> UInt64 in
            running += bucket.count
            return running
        }
        let count = max(total.load(ordering: .relaxed), running)
        return (cumulative, count, Double(sumNanoseconds.load(ordering: .relaxed)) / 1e9)
    }
}

/// One count that any thread adds to and reads (relaxed: read alone, for display), in a class
/// because `Atomic` cannot be copied into an array or a dictionary.
public final class AtomicCounter: Sendable {
    private let value = Atomic<UInt64>(0)

    public init() {}

    public func add(_ count: UInt64 = 1) { value.add(count, ordering: .relaxed) }

    public var count: UInt64 { value.load(ordering: .relaxed) }
}

/// The Prometheus text exposition format (version 0.0.4), written family by family:
/// `# HELP`, `# TYPE`, then the samples. Names follow the conventions (`_total` counters,
/// `_seconds` and `_bytes` units); label values are escaped.
public struct PrometheusText {
    public private(set) var text = ""

    public init() {}

    /// Starts a family: its help line and type (`counter`, `gauge`, `histogram`, `info`).
    public mutating func family(_ name: String, _ type: String, _ help: String) {
        text += "# HELP \(name) \(help)\n# TYPE \(name) \(type)\n"
    }

    /// One sample of the current family.
    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: Double) {
        text += name
        if !labels.isEmpty {
            text += "{" + labels.map { "\($0.0)=\"\(Self.escape($0.1))\"" }.joined(separator: ",") + "}"
        }
        text += " " + Self.format(value) + "\n"
    }

    /// One sample of an integer value.
    public mutating func sample(_ name: String, _ labels: [(String, String)] = [], _ value: UInt64) {
        sample(name, labels, Double(value))
    }

    /// A whole histogram's samples (`_bucket`, `_sum`, `_count`) for `labels`.
    public mutating func histogram(
        _ name: String, _ labels: [(String, String)] = [], _ histogram: LatencyHistogram
    ) {
        let snapshot = histogram.snapshot
        for (bound, count) in zip(histogram.bounds, snapshot.cumulative) {
            sample(name + "_bucket", labels + [("le", Self.format(bound))], count)
        }
        sample(name + "_bucket", labels + [("le", "+Inf")], snapshot.count)
        sample(name + "_sum", labels, snapshot.sumSeconds)
        sample(name + "_count", labels, snapshot.count)
    }

    static func escape(_ value: String) -> String {
        var escaped = ""
        for character in value {
            switch character {
            case "\\": escaped += "\\\\"
            case "\"": escaped += "\\\""
            case "\n": escaped += "\\n"
            default: escaped.append(character)
            }
        }
        return escaped
    }

    static func format(_ value: Double) -> String {
        if value.isNaN { return "NaN" }
        if value.isInfinite { return value > 0 ? "+Inf" : "-Inf" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
