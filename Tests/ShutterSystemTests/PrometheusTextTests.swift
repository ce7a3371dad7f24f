import ShutterSystem
import Testing

@Suite struct PrometheusTextTests {
    @Test func familiesSamplesAndEscapedLabels() {
        var text = PrometheusText()
        text.family("shutterd_things_total", "counter", "Things.")
        text.sample("shutterd_things_total", [("name", "a \"b\"\\c\nd")], UInt64(3))
        text.sample("shutterd_things_total", [], 0.25)
        #expect(
            text.text
                == "# HELP shutterd_things_total Things.\n# TYPE shutterd_things_total counter\n"
                + "shutterd_things_total{name=\"a \\\"b\\\"\\\\c\\nd\"} 3\nshutterd_things_total 0.25\n")
    }

    @Test func aHistogramIsCumulativeWithItsSumAndCount() {
        let histogram = LatencyHistogram(bounds: [0.001, 0.01])
        histogram.observe(nanoseconds: 500_000)
        histogram.observe(nanoseconds: 2_000_000)
        histogram.observe(nanoseconds: 3_000_000_000)
        var text = PrometheusText()
        text.histogram("x_seconds", [("route", "/a")], histogram)
        #expect(
            text.text == """
                x_seconds_bucket{route="/a",le="0.001"} 1
                x_seconds_bucket{route="/a",le="0.01"} 2
                x_seconds_bucket{route="/a",le="+Inf"} 3
                x_seconds_sum{route="/a"} 3.0025
                x_seconds_count{route="/a"} 3

                """)
    }
}
