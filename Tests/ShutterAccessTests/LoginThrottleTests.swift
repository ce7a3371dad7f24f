import ShutterSystem
import Testing

@testable import ShutterAccess

@Suite struct LoginThrottleTests {
    let start = MonotonicInstant(nanoseconds: 1_000_000_000)
    let limits = LoginThrottle.Limits(
        maximumFailures: 3, windowNanoseconds: 10_000_000_000, maximumTrackedPeers: 4)

    @Test func aClientIsRefusedOnceItReachesTheLimitUntilItsWindowEnds() {
        let throttle = LoginThrottle(limits: limits)
        #expect(throttle.recordFailure(peer: "a", now: start) == .counted(1))
        #expect(throttle.recordFailure(peer: "a", now: start) == .counted(2))
        #expect(throttle.retryAfter(peer: "a", now: start) == nil)
        #expect(throttle.recordFailure(peer: "a", now: start.advanced(by: 1_000_000_000)) == .limitReached)
        #expect(throttle.retryAfter(peer: "a", now: start.advanced(by: 1_000_000_000)) == 9)
        // Another client is not affected.
        #expect(throttle.retryAfter(peer: "b", now: start) == nil)
        #expect(throttle.retryAfter(peer: "a", now: start.advanced(by: 10_000_000_000)) == nil)
        #expect(throttle.recordFailure(peer: "a", now: start.advanced(by: 10_000_000_000)) == .counted(1))
    }

    @Test func memoryIsBoundedHoweverManyAddressesFail() {
        let throttle = LoginThrottle(limits: limits)
        for index in 0..<1000 {
            _ = throttle.recordFailure(
                peer: "10.0.\(index / 256).\(index % 256)", now: start.advanced(by: UInt64(index)))
        }
        #expect(throttle.trackedPeers <= 4)
        // The newest address is the one remembered.
        #expect(throttle.recordFailure(peer: "10.0.3.231", now: start.advanced(by: 1000)) == .counted(2))
    }
}
