import ShutterCapture
import ShutterSystem

/// A live-preview part that is only its frame, for tests of the fan-out without any transport.
public final class TestPreviewPart: LivePreviewPart {
    /// The frame the part was made from.
    public let frame: EncodedFrame
    public var capturedAt: MonotonicInstant { frame.capturedAt }

    public init(_ frame: EncodedFrame) {
        self.frame = frame
    }
}
