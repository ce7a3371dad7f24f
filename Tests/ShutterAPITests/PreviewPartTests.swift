import ShutterCamera
import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterAPI
@testable import ShutterCapture

@Suite struct PreviewPartTests {
    private static func head(sequence: UInt64, wallMilliseconds: Int64, jpegBytes: Int) -> String {
        let frame = EncodedFrame(
            sequence: sequence, capturedAt: MonotonicInstant(nanoseconds: 1),
            wallMilliseconds: wallMilliseconds,
            width: 2, height: 2, jpeg: [UInt8](repeating: 0xFF, count: jpegBytes))
        return String(decoding: PreviewPart(frame).head, as: UTF8.self)
    }

    @Test func theHeadNamesTypeLengthCaptureTimeAndSequence() {
        #expect(
            Self.head(sequence: 4321, wallMilliseconds: 1_796_019_205_054, jpegBytes: 109_667)
                == "Content-Type: image/jpeg\r\nContent-Length: 109667\r\nX-Timestamp: 1796019205.054\r\nX-Frame-Sequence: 4321\r\n\r\n"
        )
    }

    @Test func zeroesArePaddedWhereTheyMatter() {
        #expect(
            Self.head(sequence: 0, wallMilliseconds: 7, jpegBytes: 0)
                == "Content-Type: image/jpeg\r\nContent-Length: 0\r\nX-Timestamp: 0.007\r\nX-Frame-Sequence: 0\r\n\r\n"
        )
    }
}

/// A `/preview.mjpg` opened with a signed link: frames stop with the link.
@Suite struct PreviewStreamExpiryTests {
    private static let quiet = Logger(label: "test", level: .critical)

    @Test func aStreamOpenedWithALinkEndsWhenTheLinkExpires() throws {
        // Never started: the test hands frames in itself, as the capture thread would.
        let capture = try CaptureService(
            source: FakeCameraSource(mode: CameraMode(width: 64, height: 48, fps: 30)), quality: 80,
            logger: Self.quiet)
        let queue = ManualSerialQueue()
        let clock = ManualClock()
        let preview = LivePreview<PreviewPart>(
            capture: capture, quality: 80, queue: queue, clock: clock, logger: Self.quiet)
        let viewer = preview.makeViewer(framesPerSecond: nil, width: nil)
        queue.runOnQueue { preview.add(viewer) }
        let expiresAt = clock.wallMillisecondsNow() / 1000 + 10
        let stream = PreviewStream(
            preview: preview, viewer: viewer, advanceHeaders: false, stallTimeoutMilliseconds: 5000,
            expiresAt: expiresAt, clock: clock)
        func frame(_ sequence: UInt64) -> EncodedFrame {
            let raw = FakeCameraSource.frame(sequence: sequence)
            guard case .jpeg(let jpeg) = raw.image else { preconditionFailure() }
            return EncodedFrame(
                sequence: sequence, capturedAt: raw.capturedAt, wallMilliseconds: raw.wallMilliseconds,
                width: raw.width, height: raw.height, jpeg: jpeg)
        }
        func isFrame(_ output: HTTPStreamOutput) -> Bool {
            if case .chunks(let chunks) = output { return chunks.count == 3 }
            return false
        }
        guard case .chunks = stream.nextOutput() else { return #expect(Bool(false), "no preamble") }
        preview.frameArrived(frame(1))
        queue.runPending()
        #expect(isFrame(stream.nextOutput()))
        // Through the link's last second, frames go out.
        clock.advance(by: 10_000_000_000)
        preview.frameArrived(frame(2))
        queue.runPending()
        #expect(isFrame(stream.nextOutput()))
        // After it, the next frame ends the stream instead.
        clock.advance(by: 1_000_000_000)
        preview.frameArrived(frame(3))
        queue.runPending()
        guard case .finished = stream.nextOutput() else { return #expect(Bool(false), "still streaming") }
        queue.runOnQueue { preview.remove(viewer) }
    }
}
