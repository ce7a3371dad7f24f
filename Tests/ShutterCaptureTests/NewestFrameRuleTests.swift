import ShutterSystem
import Testing

@testable import ShutterCapture

/// The age rule of "the newest frame" (`GET /preview.jpg`), on instants given by the test.
struct NewestFrameRuleTests {
    private let rule = NewestFrameRule(framesPerSecond: 30)
    private let second = MonotonicInstant(nanoseconds: 1_000_000_000)

    private func frame(capturedAt: MonotonicInstant, receivedAt: MonotonicInstant?) -> EncodedFrame {
        EncodedFrame(
            sequence: 7, capturedAt: capturedAt, wallMilliseconds: 0, width: 64, height: 48, jpeg: [],
            receivedAt: receivedAt)
    }

    @Test func theAgeIsCountedFromTheFramesArrivalNotItsExposure() {
        // A UVC camera stamps the start of exposure; this frame arrived 30 ms later, and is asked
        // for 40 ms after that: 70 ms old by the camera's clock, two intervals, yet the newest.
        let received = second.advanced(by: 30_000_000)
        let arrived = frame(capturedAt: second, receivedAt: received)
        #expect(rule.answersAtOnce(arrived, now: received.advanced(by: 40_000_000)))
    }

    @Test func aFrameAnswersForAnIntervalAndAHalfAfterItArrived() {
        #expect(rule.frameIntervalNanoseconds == 33_333_333)
        #expect(rule.maximumAgeNanoseconds == 49_999_999)
        let arrived = frame(capturedAt: second, receivedAt: second)
        #expect(rule.answersAtOnce(arrived, now: second))
        #expect(rule.answersAtOnce(arrived, now: second.advanced(by: 49_999_999)))
        #expect(!rule.answersAtOnce(arrived, now: second.advanced(by: 50_000_000)))
    }

    @Test func aFrameReceivedAfterTheRequestWasTimedAnswersIt() {
        // Published on the capture thread between the loop reading the clock and taking the lock.
        let arrived = frame(capturedAt: second, receivedAt: second.advanced(by: 5_000_000))
        #expect(rule.answersAtOnce(arrived, now: second))
    }

    @Test func aFrameWithoutItsArrivalTimeIsAgedFromItsCapture() {
        let noSignal = frame(capturedAt: second, receivedAt: nil)
        #expect(noSignal.receivedAt == second)
        #expect(!rule.answersAtOnce(noSignal, now: second.advanced(by: 50_000_000)))
    }

    @Test func theFrameWaitedForMayHaveBeenExposedWithinTheLastInterval() {
        #expect(rule.waitedFrameCapturedAtOrAfter(now: second).nanoseconds == 1_000_000_000 - 33_333_333)
        // Near the clock's origin the instant stops at zero rather than wrapping.
        #expect(rule.waitedFrameCapturedAtOrAfter(now: MonotonicInstant(nanoseconds: 10)).nanoseconds == 0)
    }

    @Test func aRateOfZeroIsTakenAsOneFramePerSecond() {
        #expect(NewestFrameRule(framesPerSecond: 0).frameIntervalNanoseconds == 1_000_000_000)
    }
}
