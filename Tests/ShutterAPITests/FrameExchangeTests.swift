import ShutterSystem
import Testing

@testable import ShutterAPI

@Suite struct FrameExchangeTests {
    private func frame(_ sequence: UInt64, at nanoseconds: UInt64) -> EncodedFrame {
        EncodedFrame(
            sequence: sequence, capturedAt: MonotonicInstant(nanoseconds: nanoseconds), wallMilliseconds: 0,
            width: 2, height: 2, jpeg: [UInt8(sequence)])
    }

    @Test func nobodyWaitingMeansNoEncoding() {
        let exchange = FrameExchange()
        #expect(!exchange.wantsFrame())
    }

    @Test func waiterGetsTheFirstFrameAtOrAfterItsInstant() async throws {
        let exchange = FrameExchange()
        exchange.publish(frame(1, at: 100))
        async let waited = exchange.frame(
            capturedAtOrAfter: MonotonicInstant(nanoseconds: 150), timeoutMilliseconds: 5000)
        while !exchange.wantsFrame() { await Task.yield() }
        exchange.publish(frame(2, at: 140))  // older than the request: not good enough
        #expect(exchange.wantsFrame())
        exchange.publish(frame(3, at: 160))
        #expect(try await waited.sequence == 3)
        #expect(!exchange.wantsFrame())
    }

    @Test func aRecentEnoughLatestFrameAnswersAtOnce() async throws {
        let exchange = FrameExchange()
        exchange.publish(frame(5, at: 500))
        let result = try await exchange.frame(
            capturedAtOrAfter: MonotonicInstant(nanoseconds: 400), timeoutMilliseconds: 10)
        #expect(result.sequence == 5)
    }

    @Test func waitersTimeOut() async {
        let exchange = FrameExchange()
        await #expect(throws: CaptureError.timedOut(milliseconds: 20)) {
            try await exchange.frame(
                capturedAtOrAfter: MonotonicInstant(nanoseconds: 1), timeoutMilliseconds: 20)
        }
        #expect(!exchange.wantsFrame(), "an expired waiter is forgotten")
    }

    @Test func failuresReachWaitersUntilTheNextFrame() async throws {
        let exchange = FrameExchange()
        let waited = Task {
            try await exchange.frame(
                capturedAtOrAfter: MonotonicInstant(nanoseconds: 1), timeoutMilliseconds: 5000)
        }
        while !exchange.wantsFrame() { await Task.yield() }
        exchange.fail(.cameraUnavailable("unplugged"))
        await #expect(throws: CaptureError.cameraUnavailable("unplugged")) { try await waited.value }
        await #expect(throws: CaptureError.cameraUnavailable("unplugged")) {
            try await exchange.frame(
                capturedAtOrAfter: MonotonicInstant(nanoseconds: 1), timeoutMilliseconds: 50)
        }
        exchange.publish(frame(9, at: 10))
        #expect(exchange.failure == nil)
    }
}
