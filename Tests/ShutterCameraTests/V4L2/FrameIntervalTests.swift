import Testing

@testable import ShutterCamera

@Suite struct FrameRatesTests {
    @Test(arguments: [(20, 15.0), (25, 30.0), (1, 5.0), (100, 30.0)])
    func discreteTakesTheNearest(requested: Int, expected: Double) {
        let rates = FrameRates.discrete([30, 15, 5].map { FrameInterval(fps: $0) })
        #expect(rates.interval(closestTo: requested).fps == expected)
    }

    @Test func tiesGoToTheFasterRate() {
        let rates = FrameRates.discrete([FrameInterval(fps: 20), FrameInterval(fps: 30)])
        #expect(rates.interval(closestTo: 25).fps == 30)
    }

    @Test func rangesClampAndUnknownAsksForTheRequestedRate() {
        let range = FrameRates.range(fastest: FrameInterval(fps: 60), slowest: FrameInterval(fps: 2))
        #expect(range.interval(closestTo: 100) == FrameInterval(fps: 60))
        #expect(range.interval(closestTo: 1) == FrameInterval(fps: 2))
        #expect(range.interval(closestTo: 24) == FrameInterval(fps: 24))
        #expect(FrameRates.unknown.interval(closestTo: 15) == FrameInterval(fps: 15))
        #expect(FrameRates.discrete([]).interval(closestTo: 15) == FrameInterval(fps: 15))
    }

    @Test func ratesForPeopleAreRoundedDistinctAndFastestFirst() {
        let rates = FrameRates.discrete([
            FrameInterval(fps: 15), FrameInterval(numerator: 1001, denominator: 30000),
            FrameInterval(fps: 15),
            FrameInterval(numerator: 0, denominator: 0),
        ])
        #expect(rates.framesPerSecond == [29.97, 15])
        #expect(rates.maximumFPS == 30000.0 / 1001)
        #expect(FrameRates.unknown.framesPerSecond.isEmpty)
        #expect(FrameRates.unknown.maximumFPS == nil)
    }

    @Test func zeroIntervalsHaveNoRate() {
        #expect(FrameInterval(numerator: 0, denominator: 30).fps == nil)
        #expect(FrameInterval(numerator: 1, denominator: 0).nanoseconds == nil)
        #expect(FrameInterval(fps: 0) == FrameInterval(fps: 1))
        #expect(FrameInterval(fps: 25).nanoseconds == 40_000_000)
    }
}
