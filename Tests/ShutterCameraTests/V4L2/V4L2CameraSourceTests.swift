import CV4L2
import FoundationEssentials
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCamera

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct V4L2CameraSourceTests {
    static let mode = CameraMode(width: 640, height: 480, fps: 30)

    static func source(_ path: String) -> V4L2CameraSource {
        V4L2CameraSource(path: path, requested: mode, logger: Logger(label: "test", sink: RecordingLogSink()))
    }

    @Test func beforeStartItIsNamedByItsPathAndHasTheRequestedMode() throws {
        let source = Self.source("/nonexistent/video0")
        #expect(source.name == "/nonexistent/video0")
        #expect(source.mode == Self.mode)
        #expect(source.pixelFormat == nil)
        #expect(throws: CameraError.notStarted) { try source.nextFrame() }
        source.stop()
        #expect(throws: CameraError.stopped) { try source.nextFrame() }
    }

    @Test func aMissingDeviceIsDisconnectedAndCanBeRetried() {
        let source = Self.source("/nonexistent/video0")
        for _ in 0..<2 {
            #expect {
                try source.start()
            } throws: { error in
                if case CameraError.disconnected(let message) = error {
                    return message.contains("/nonexistent/video0")
                }
                return false
            }
            source.stop()
        }
        #expect {
            try source.controls()
        } throws: { error in
            if case CameraError.disconnected = error { return true }
            return false
        }
    }

    @Test func aNodeThatIsNotV4L2FailsToStartAndIsClosedAgain() {
        let source = Self.source("/dev/null")
        #expect(throws: CameraError.device(SystemError(errno: ENOTTY, call: "VIDIOC_QUERYCAP"))) {
            try source.start()
        }
        #expect(throws: CameraError.notStarted) { try source.nextFrame() }
    }

    @Test func monotonicBufferTimestampsAreUsedWhenPlausible() {
        let monotonic = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        let now = MonotonicInstant(nanoseconds: 5_000_000_000)
        #expect(
            V4L2CameraSource.captureInstant(timestampNanoseconds: 4_900_000_000, flags: monotonic, now: now)
                == MonotonicInstant(nanoseconds: 4_900_000_000))
        // Another clock, no timestamp, or one from the future: use the time of dequeueing.
        let copied = UInt32(V4L2_BUF_FLAG_TIMESTAMP_COPY)
        #expect(
            V4L2CameraSource.captureInstant(timestampNanoseconds: 4_900_000_000, flags: copied, now: now)
                == now)
        #expect(
            V4L2CameraSource.captureInstant(timestampNanoseconds: 4_900_000_000, flags: 0, now: now) == now)
        #expect(V4L2CameraSource.captureInstant(timestampNanoseconds: 0, flags: monotonic, now: now) == now)
        #expect(
            V4L2CameraSource.captureInstant(timestampNanoseconds: 6_000_000_000, flags: monotonic, now: now)
                == now)
        // Other flags beside the timestamp type do not matter.
        let flagged = monotonic | UInt32(V4L2_BUF_FLAG_TSTAMP_SRC_SOE) | UInt32(V4L2_BUF_FLAG_DONE)
        #expect(
            V4L2CameraSource.captureInstant(timestampNanoseconds: 1, flags: flagged, now: now)
                == MonotonicInstant(nanoseconds: 1))
    }

    @Test(arguments: [
        (30.0, 1_000_000_000), (5.0, 1_000_000_000), (2.0, 2_500_000_000), (0.5, 10_000_000_000),
    ])
    func theFrameTimeoutIsFiveIntervalsButAtLeastASecond(fps: Double, nanoseconds: UInt64) {
        #expect(V4L2CameraSource.frameTimeoutNanoseconds(fps: fps) == nanoseconds)
    }

    @Test func anUnknownRateWaitsOneSecond() {
        #expect(V4L2CameraSource.frameTimeoutNanoseconds(fps: nil) == 1_000_000_000)
        #expect(V4L2CameraSource.frameTimeoutNanoseconds(fps: 0) == 1_000_000_000)
    }

    /// The device for the streaming test, from `SHUTTER_TEST_V4L2_DEVICE` (such as `/dev/video0`, or
    /// the emulated camera's node); unset, the test is skipped, so no test depends on a camera.
    static let testDevice = ProcessInfo.processInfo.environment["SHUTTER_TEST_V4L2_DEVICE"]

    @Test(.enabled(if: testDevice != nil, "set SHUTTER_TEST_V4L2_DEVICE to a camera node"))
    func streamsRestartsAndListsControlsOnARealDevice() throws {
        let path = try #require(Self.testDevice)
        let description = try #require(try V4L2Discovery.describe(path: path))
        #expect(!description.formats.isEmpty)
        let source = V4L2CameraSource(
            path: path, requested: Self.mode, warmupMilliseconds: 200,
            logger: Logger(label: "test", sink: RecordingLogSink()))
        for _ in 0..<2 {
            try source.start()
            #expect(source.name == description.card)
            #expect(source.pixelFormat != nil)
            var last: UInt64 = 0
            for _ in 0..<5 {
                let frame = try source.nextFrame()
                #expect(frame.sequence > last)
                last = frame.sequence
                switch frame.image {
                case .jpeg(let jpeg): #expect(try JPEGDecoder.header(of: jpeg).width == frame.width)
                case .yuv(let image): #expect(image.width == source.mode.width)
                }
            }
            _ = try source.controls()
            source.stop()
            #expect(throws: CameraError.stopped) { try source.nextFrame() }
        }
    }
}
