import ShutterSystem

/// When the newest frame in hand answers a request for "the newest frame" (`GET /preview.jpg`)
/// at once, and when the request must wait for the next one.
///
/// The frame's age is counted from when the daemon received it, not from the camera's
/// timestamp: a UVC camera stamps the start of exposure (`V4L2_BUF_FLAG_TSTAMP_SRC_SOE`), and the
/// frame arrives a transfer later, so by the camera's clock a frame can be most of an interval
/// old the moment it arrives. Received at most one interval ago, the frame is the newest the
/// camera can have delivered: the next one is not due yet. A half interval more is allowed for
/// the jitter of arrivals (USB, a busy machine), so that a next frame a little late does not
/// make the request wait for it; past that, frames have stopped coming (the camera idles,
/// is reopening, or its frames are not kept) and the request waits for the next one.
public struct NewestFrameRule: Sendable, Equatable {
    /// The camera's frame interval.
    public let frameIntervalNanoseconds: UInt64

    /// The rule for a camera delivering `framesPerSecond` (at least 1).
    public init(framesPerSecond: Int) {
        frameIntervalNanoseconds = 1_000_000_000 / UInt64(max(1, framesPerSecond))
    }

    /// How long after its arrival a frame still answers at once: an interval, plus half of one.
    public var maximumAgeNanoseconds: UInt64 { frameIntervalNanoseconds + frameIntervalNanoseconds / 2 }

    /// Whether `frame` answers a request made at `now` at once.
    public func answersAtOnce(_ frame: EncodedFrame, now: MonotonicInstant) -> Bool {
        now.nanoseconds(since: frame.receivedAt) <= maximumAgeNanoseconds
    }

    /// The capture instant a frame waited for must reach: any frame captured within the last
    /// interval, so that a frame whose exposure began just before the request but which arrives
    /// after it is taken rather than the one after it. Never the frame in hand, which
    /// `answersAtOnce` refused: it arrived over an interval and a half ago.
    public func waitedFrameCapturedAtOrAfter(now: MonotonicInstant) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: now.nanoseconds - min(now.nanoseconds, frameIntervalNanoseconds))
    }
}
