import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCapture

// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct FrameExchangeTests {
    private func frame(_ sequence: UInt64, at nanoseconds: UInt64) -> EncodedFrame {
        EncodedFrame(
            sequence: sequence, capturedAt: MonotonicInstant(nanoseconds: nanoseconds), wallMilliseconds: 0,
            width: 2, height: 2, jpeg: [UInt8(sequence)])
    }

    private func makeExchange(_ clock: ManualClock = ManualClock()) -> (FrameExchange, ThreadWakeup) {
        let demand = ThreadWakeup()
        return (FrameExchange(clock: clock, demand: demand), demand)
    }

    @Test func nobodyWaitingMeansNoEncoding() {
        let (exchange, _) = makeExchange()
        #expect(!exchange.wantsFrame())
    }

    @Test func waiterGetsTheFirstFrameAtOrAfterItsInstant() async throws {
        let clock = ManualClock()
        let (exchange, demand) = makeExchange(clock)
        exchange.publish(frame(1, at: 100))
        async let waited = exchange.frame(
            capturedAtOrAfter: MonotonicInstant(nanoseconds: 150), timeoutMilliseconds: 5000)
        // Registered once its timeout sleeps on the clock.
        await clock.sleepers(atLeast: 1)
        #expect(exchange.wantsFrame())
        // A waiter rings the capture thread, which may be idling with the camera closed.
        #expect(SystemClock().wait(for: demand, until: SystemClock().monotonicNow()))
        exchange.publish(frame(2, at: 140))  // older than the request: not good enough
        #expect(exchange.wantsFrame())
        exchange.publish(frame(3, at: 160))
        #expect(try await waited.sequence == 3)
        #expect(!exchange.wantsFrame())
    }

    @Test func aRecentEnoughLatestFrameAnswersAtOnce() async throws {
        let (exchange, _) = makeExchange()
        exchange.publish(frame(5, at: 500))
        let result = try await exchange.frame(
            capturedAtOrAfter: MonotonicInstant(nanoseconds: 400), timeoutMilliseconds: 10)
        #expect(result.sequence == 5)
    }

    @Test func waitersTimeOutOnTheClock() async throws {
        let clock = ManualClock()
        let (exchange, _) = makeExchange(clock)
        let waiter = Task {
            try await exchange.frame(
                capturedAtOrAfter: MonotonicInstant(nanoseconds: 1), timeoutMilliseconds: 20)
        }
        await clock.sleepers(atLeast: 1)
        clock.advance(by: 19_999_999)
        #expect(exchange.wantsFrame(), "not yet expired")
        clock.advance(by: 1)
        await #expect(throws: CaptureError.timedOut(milliseconds: 20)) { try await waiter.value }
        #expect(!exchange.wantsFrame(), "an expired waiter is forgotten")
    }

    @Test func anAnsweredWaiterLeavesNoTimerBehind() async throws {
        let clock = ManualClock()
        let (exchange, _) = makeExchange(clock)
        let waiter = Task {
            try await exchange.frame(
                capturedAtOrAfter: MonotonicInstant(nanoseconds: 1), timeoutMilliseconds: 3000)
        }
        await clock.sleepers(atLeast: 1)
        exchange.publish(frame(1, at: 10))
        #expect(try await waiter.value.sequence == 1)
        // The timeout's sleep is cancelled with its waiter, not left to run out.
        #expect(clock.sleeperCount == 0)
    }

    @Test func failuresReachWaitersUntilTheNextFrame() async throws {
        let clock = ManualClock()
        let (exchange, _) = makeExchange(clock)
        let gone = CaptureError.cameraUnavailable(.disconnected("/dev/video0"), camera: "cam")
        let waited = Task {
            try await exchange.frame(
                capturedAtOrAfter: MonotonicInstant(nanoseconds: 1), timeoutMilliseconds: 5000)
        }
        await clock.sleepers(atLeast: 1)
        exchange.fail(gone)
        await #expect(throws: gone) { try await waited.value }
        await #expect(throws: gone) {
            try await exchange.frame(
                capturedAtOrAfter: MonotonicInstant(nanoseconds: 1), timeoutMilliseconds: 50)
        }
        exchange.publish(frame(9, at: 10))
        #expect(exchange.failure == nil)
    }
}
