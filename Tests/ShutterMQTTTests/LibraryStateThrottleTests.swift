import ShutterMQTT
import ShutterSystem
import Testing

@Suite struct LibraryStateThrottleTests {
    private func at(_ milliseconds: UInt64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: milliseconds * 1_000_000)
    }

    @Test func aBurstCostsOneNowAndOneAtTheEndOfTheInterval() {
        var throttle = LibraryStateThrottle(intervalNanoseconds: 1_000_000_000)
        #expect(throttle.changed(now: at(1000)) == .publishNow)
        #expect(throttle.changed(now: at(1033)) == .publishLater(at: at(2000)))
        for step in UInt64(2)...29 {
            #expect(throttle.changed(now: at(1000 + 33 * step)) == .alreadyScheduled)
        }
        throttle.trailingPublished(now: at(2000))
        #expect(throttle.changed(now: at(2500)) == .publishLater(at: at(3000)))
    }

    @Test func changesFartherApartThanTheIntervalArePublishedAtOnce() {
        var throttle = LibraryStateThrottle(intervalNanoseconds: 1_000_000_000)
        #expect(throttle.changed(now: at(0)) == .publishNow)
        #expect(throttle.changed(now: at(1000)) == .publishNow)
        #expect(throttle.changed(now: at(5000)) == .publishNow)
    }
}
