import ShutterCamera
import ShutterSystem

/// A JPEG-encoded camera frame, shared read-only by every consumer that asked for it.
public final class EncodedFrame: Sendable {
    /// The camera's frame number.
    public let sequence: UInt64
    /// When the camera captured it, on the monotonic clock.
    public let capturedAt: MonotonicInstant
    /// When the daemon received it from the camera, on the monotonic clock: later than
    /// `capturedAt` by the camera's own latency (a UVC camera stamps the start of exposure, and
    /// the frame arrives after its transfer), which this keeps out of "how old is the newest frame".
    public let receivedAt: MonotonicInstant
    /// When the camera captured it, in UTC milliseconds since 1970.
    public let wallMilliseconds: Int64
    public let width: Int
    public let height: Int
    /// The complete JPEG file.
    public let jpeg: [UInt8]
    /// How long encoding took (0 when the camera delivered JPEG), for `Server-Timing`.
    public let encodeNanoseconds: UInt64
    /// The picture before the burned-in text, turned as `jpeg` is, kept only when stored
    /// pictures draw their own text (with their label or job): nil otherwise.
    public let pictureSource: RawImage?

    public init(
        sequence: UInt64, capturedAt: MonotonicInstant, wallMilliseconds: Int64, width: Int, height: Int,
        jpeg: [UInt8], encodeNanoseconds: UInt64 = 0, pictureSource: RawImage? = nil,
        receivedAt: MonotonicInstant? = nil
    ) {
        self.receivedAt = receivedAt ?? capturedAt
        self.pictureSource = pictureSource
        self.encodeNanoseconds = encodeNanoseconds
        self.sequence = sequence
        self.capturedAt = capturedAt
        self.wallMilliseconds = wallMilliseconds
        self.width = width
        self.height = height
        self.jpeg = jpeg
    }
}
