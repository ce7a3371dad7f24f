import ShutterSystem

/// Requests answered, by method, route pattern and status class, with a latency histogram per
/// route: what `/metrics` shows about HTTP.
///
/// Labels are bounded whatever clients send: a route is a pattern from the router
/// (`/media/{id}.jpg`) or `unmatched`, never a raw path, and a method outside the standard
/// ones is `other`. Recorded on the event loop; read by any thread.
public final class HTTPMetrics: Sendable {
    /// The route of requests no route answered (404, 405, malformed, refused before routing).
    public static let unmatchedRoute = "unmatched"

    private static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]

    /// One method and route's counts.
    final class Series: Sendable {
        /// Answers by status class: 1xx … 5xx.
        let byClass: [AtomicCounter] = (0..<5).map { _ in AtomicCounter() }
        let latency = LatencyHistogram()
    }

    struct Key: Hashable, Comparable {
        let method: String
        let route: String
        static func < (lhs: Key, rhs: Key) -> Bool { (lhs.route, lhs.method) < (rhs.route, rhs.method) }
    }

    // Rule: the dictionary is changed only under its lock; a series, once made, is updated
    // with atomics outside it. It holds at most (routes + 1) × 8 series.
    private let series = LockedValue<[Key: Series]>([:])

    public init() {}

    /// Counts one answered request.
    public func record(method: HTTPMethod, route: String, status: Int, nanoseconds: UInt64) {
        let key = Key(
            method: Self.methods.contains(method.rawValue) ? method.rawValue : "other", route: route)
        let entry = series.withLock { series in
            if let existing = series[key] { return existing }
            let made = Series()
            series[key] = made
            return made
        }
        let statusClass = min(max(status / 100, 1), 5) - 1
        entry.byClass[statusClass].add()
        entry.latency.observe(nanoseconds: nanoseconds)
    }

    /// Appends the request counter and the latency histogram families to `text`.
    public func write(to text: inout PrometheusText) {
        let all = series.withLock { $0 }.sorted { $0.key < $1.key }
        text.family(
            "shutterd_http_requests_total", "counter",
            "HTTP requests answered, by method, route pattern and status class.")
        for (key, entry) in all {
            for (index, counter) in entry.byClass.enumerated() {
                let count = counter.count
                guard count > 0 else { continue }
                text.sample(
                    "shutterd_http_requests_total",
                    [("method", key.method), ("route", key.route), ("code", "\(index + 1)xx")], count)
            }
        }
        text.family(
            "shutterd_http_request_duration_seconds", "histogram",
            "Time from a request's first byte to its answer being queued, by method and route pattern.")
        for (key, entry) in all {
            text.histogram(
                "shutterd_http_request_duration_seconds", [("method", key.method), ("route", key.route)],
                entry.latency)
        }
    }
}
