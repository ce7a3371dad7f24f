import ShutterSystem

/// The pixels of a captured frame, in whichever form the camera delivered them.
public enum RawImage: Sendable {
    /// A complete JPEG file (cameras that deliver MJPEG).
    case jpeg([UInt8])
    /// Uncompressed planar Y'CbCr, still to be encoded.
    case yuv(YUVImage)
}

/// One frame from a `CameraSource`, stamped when it was captured.
public struct RawFrame: Sendable {
    /// Counts frames from 1 since `start()`; a gap means frames were dropped.
    public var sequence: UInt64
    /// When the frame was captured, on the monotonic clock.
    public var capturedAt: MonotonicInstant
    /// When the frame was captured, in milliseconds since 1970-01-01 UTC.
    public var wallMilliseconds: Int64
    /// The pixels.
    public var image: RawImage
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// A frame with every field given.
    public init(
        sequence: UInt64, capturedAt: MonotonicInstant, wallMilliseconds: Int64, image: RawImage, width: Int,
        height: Int
    ) {
        self.sequence = sequence
        self.capturedAt = capturedAt
        self.wallMilliseconds = wallMilliseconds
        self.image = image
        self.width = width
        self.height = height
    }
}
