import ShutterCamera
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCapture

/// The preview's burned-in text on the capture thread: drawn in the frame's own planes when the
/// camera lends them, in the encoder's copy otherwise, with the same JPEG either way.
// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct CaptureLoopTests {
    private let quiet = Logger(label: "test", level: .critical)
    static let size = (width: 160, height: 120)
    static let style = TextOverlay.Style(position: .bottomLeft, pixelSize: 14)
    static let template = OverlayTemplate("%H:%M:%S.%f #{frame}")!

    /// A YUYV camera's frame as `V4L2FrameDecoder` makes it: packed 4:2:2 converted to planar
    /// full range by the real conversion; a gradient that moves with `sequence`.
    static func yuyvFrame(sequence: UInt64) -> RawFrame {
        let (width, height) = size
        var packed = [UInt8](repeating: 0, count: width * height * 2)
        for y in 0..<height {
            for x in 0..<width {
                packed[(y * width + x) * 2] = UInt8(16 + (x + y + Int(sequence) * 7) % 200)
                packed[(y * width + x) * 2 + 1] = UInt8(x & 1 == 0 ? 100 + y % 50 : 150 - x % 40)
            }
        }
        var image = YUVImage(width: width, height: height, subsampling: .yuv422)
        let converted = packed.withUnsafeBytes {
            PixelConversion.convertYUYV($0, bytesPerLine: width * 2, into: &image, fullRange: true)
        }
        precondition(converted)
        return RawFrame(
            sequence: sequence, capturedAt: MonotonicInstant(nanoseconds: sequence),
            wallMilliseconds: 1_795_000_000_000 + Int64(sequence) * 33, image: .yuv(image), width: width,
            height: height)
    }

    /// What the preview's JPEG of `yuyvFrame(sequence:)` must be: the text drawn in the
    /// encoder's copy of the planes, the path that leaves the frame as it was.
    static func expectedPreview(sequence: UInt64) throws -> (withText: [UInt8], without: [UInt8]) {
        guard case .yuv(let image) = yuyvFrame(sequence: sequence).image else { return ([], []) }
        let fields = OverlayTemplate.Fields(
            wallMilliseconds: 1_795_000_000_000 + Int64(sequence) * 33, camera: "fake", frame: sequence,
            width: image.width, height: image.height)
        let lines = template.expand(fields, utc: true)
        let renderer = TextOverlay(style: style)
        let encoder = try JPEGEncoder(quality: 80)
        let withText = try encoder.encode(image) { renderer.draw(lines, intoPlanes: $0, of: image) }
        return (withText, try encoder.encode(image))
    }

    /// Runs a capture service over the frames 1 and 2 of `yuyvFrame` with the text on `targets`,
    /// and returns the JPEGs published for them with the source.
    private func publish(onPictures: Bool, lends: Bool) async throws -> (
        [UInt64: EncodedFrame], FakeCameraSource
    ) {
        let clock = ManualClock()
        let source = FakeCameraSource(
            mode: CameraMode(width: Self.size.width, height: Self.size.height, fps: 30),
            script: [.frame(Self.yuyvFrame(sequence: 1)), .frame(Self.yuyvFrame(sequence: 2))],
            whenExhausted: .paced, clock: clock, lendsFrameBuffers: lends)
        let overlay = CaptureOverlay(
            template: Self.template, style: Self.style, utc: true, onPictures: onPictures, onPreview: true)
        let capture = try CaptureService(
            source: source, quality: 80, overlay: overlay, clock: clock, logger: quiet)
        let published = LockedValue<[UInt64: EncodedFrame]>([:])
        capture.setFrameObserver { frame in published.withLock { $0[frame.sequence] = frame } }
        capture.setLiveDemand(true)
        try await capture.start()
        // Both scripted frames go out at once; then the camera waits for the clock.
        await clock.sleepers(atLeast: 1)
        await capture.stop()
        return (published.withLock { $0 }, source)
    }

    @Test func aLentFrameIsDrawnOnInPlaceAndGivesTheSameJPEGAsTheEncodersCopy() async throws {
        let (published, source) = try await publish(onPictures: true, lends: true)
        for sequence: UInt64 in [1, 2] {
            let expected = try Self.expectedPreview(sequence: sequence)
            #expect(expected.withText != expected.without)
            #expect(published[sequence]?.jpeg == expected.withText)
        }
        // Each frame's own buffer came back, the text on it: drawn there, never copied.
        #expect(source.lentCount == 2)
        let returned = source.returnedBuffers
        #expect(returned.map(\.address) == source.deliveredBufferAddresses)
        for (sequence, buffer) in zip([UInt64(1), 2], returned) {
            guard case .yuv(let clean) = Self.yuyvFrame(sequence: sequence).image else { continue }
            #expect(buffer.bytes.count == clean.bytes.count && buffer.bytes != clean.bytes)
        }
    }

    @Test func aFrameKeptCleanForPicturesIsNotLentAndGetsItsTextInTheEncodersCopy() async throws {
        // Preview-only text: stored pictures are made from the frame as captured.
        let (published, source) = try await publish(onPictures: false, lends: true)
        for sequence: UInt64 in [1, 2] {
            #expect(published[sequence]?.jpeg == (try Self.expectedPreview(sequence: sequence).withText))
            guard case .yuv(let kept) = published[sequence]?.pictureSource,
                case .yuv(let clean) = Self.yuyvFrame(sequence: sequence).image
            else {
                Issue.record("frame \(sequence) has no planes for pictures")
                continue
            }
            #expect(kept.bytes == clean.bytes)
        }
        #expect(source.lentCount == 0 && source.returnedBuffers.isEmpty)
    }

    @Test func aSourceThatDoesNotLendGetsTheSameJPEGFromTheEncodersCopy() async throws {
        let (published, source) = try await publish(onPictures: true, lends: false)
        for sequence: UInt64 in [1, 2] {
            #expect(published[sequence]?.jpeg == (try Self.expectedPreview(sequence: sequence).withText))
        }
        #expect(source.lentCount == 0 && source.returnedBuffers.isEmpty)
    }
}
