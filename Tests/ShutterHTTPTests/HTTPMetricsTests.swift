import ShutterHTTP
import ShutterSystem
import Testing

@Suite struct HTTPMetricsTests {
    @Test func requestsAreCountedByRouteAndStatusClassWithBoundedLabels() {
        let metrics = HTTPMetrics()
        metrics.record(method: .get, route: "/media/{id}.jpg", status: 200, nanoseconds: 1_000_000)
        metrics.record(method: .get, route: "/media/{id}.jpg", status: 304, nanoseconds: 1_000_000)
        metrics.record(method: .get, route: "/media/{id}.jpg", status: 200, nanoseconds: 1_000_000)
        // Whatever a client sends, the labels stay few: an odd method is "other".
        for index in 0..<100 {
            metrics.record(
                method: HTTPMethod(rawValue: "X\(index)"), route: HTTPMetrics.unmatchedRoute, status: 405,
                nanoseconds: 10)
        }
        var text = PrometheusText()
        metrics.write(to: &text)
        let lines = text.text.split(separator: "\n")
        #expect(
            lines.contains(
                #"shutterd_http_requests_total{method="GET",route="/media/{id}.jpg",code="2xx"} 2"#))
        #expect(
            lines.contains(
                #"shutterd_http_requests_total{method="GET",route="/media/{id}.jpg",code="3xx"} 1"#))
        #expect(
            lines.contains(#"shutterd_http_requests_total{method="other",route="unmatched",code="4xx"} 100"#))
        #expect(lines.filter { $0.hasPrefix("shutterd_http_requests_total{") }.count == 3)
        #expect(
            lines.contains(
                #"shutterd_http_request_duration_seconds_count{method="GET",route="/media/{id}.jpg"} 3"#))
    }
}
