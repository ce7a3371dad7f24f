import FoundationEssentials
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCamera

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct V4L2DiscoveryTests {
    @Test(arguments: [
        ("video0", 0), ("video12", 12), ("video63", 63), ("video", nil), ("video01", nil), ("videox", nil),
        ("video-1", nil), ("video1a", nil), ("vbi0", nil), ("media0", nil), ("v4l-subdev0", nil),
    ])
    func nodeNamesAreVideoAndANumber(name: String, number: Int?) {
        #expect(V4L2Discovery.videoNodeNumber(name) == number)
    }

    static func touch(_ path: String) {
        let descriptor = open(path, O_WRONLY | O_CREAT, 0o600)
        precondition(descriptor >= 0, "cannot create \(path)")
        closeDescriptor(descriptor)
    }

    @Test func listedAndProbedNodesComeInNumberOrderOnce() async throws {
        try await withTemporaryDirectory { directory in
            for name in ["video10", "video2", "video0", "videox", "video", "video01", "media0", "video70"] {
                Self.touch("\(directory)/\(name)")
            }
            #expect(
                V4L2Discovery.devicePaths(in: directory) == [
                    "\(directory)/video0", "\(directory)/video2", "\(directory)/video10",
                    "\(directory)/video70",
                ])
            #expect(V4L2Discovery.devicePaths(in: "\(directory)/missing").isEmpty)
        }
    }

    @Test func filesThatAreNotDevicesAreSkipped() async throws {
        try await withTemporaryDirectory { directory in
            Self.touch("\(directory)/video0")
            let sink = RecordingLogSink()
            let logger = Logger(label: "test", level: .debug, sink: sink)
            #expect(V4L2Discovery.captureDevices(directory: directory, logger: logger).isEmpty)
            #expect(V4L2Discovery.firstCaptureDevice(directory: directory, logger: logger) == nil)
            #expect(sink.lines.count == 2)
            #expect(
                sink.lines.allSatisfy { $0.contains("skipping a video device") && $0.contains("(errno 25)") })
        }
    }

    @Test func describingAMissingNodeSaysItIsDisconnected() {
        #expect {
            try V4L2Discovery.describe(path: "/nonexistent/video0")
        } throws: { error in
            if case CameraError.disconnected = error { return true }
            return false
        }
    }

    @Test func offeredFormatsBecomeDescriptions() throws {
        let format = OfferedFormat(
            fourcc: FourCC.code("MJPG")!, description: "Motion-JPEG",
            sizes: [
                OfferedSize(
                    size: FrameSize(width: 1280, height: 720),
                    rates: .discrete([
                        FrameInterval(fps: 15), FrameInterval(numerator: 1001, denominator: 30000),
                    ])),
                OfferedSize(size: FrameSize(width: 640, height: 480), rates: .unknown),
            ])
        let description = FormatDescription(format)
        #expect(
            description
                == FormatDescription(
                    fourcc: "MJPG", description: "Motion-JPEG",
                    sizes: [
                        SizeDescription(width: 1280, height: 720, fps: [29.97, 15]),
                        SizeDescription(width: 640, height: 480, fps: []),
                    ]))
        let camera = CameraDescription(
            path: "/dev/video0", driver: "uvcvideo", card: "Webcam", busInfo: "usb-1", formats: [description])
        let decoded = try JSONDecoder().decode(CameraDescription.self, from: JSONEncoder().encode(camera))
        #expect(decoded == camera)
    }
}
