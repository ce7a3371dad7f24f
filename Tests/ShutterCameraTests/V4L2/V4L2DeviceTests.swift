import CV4L2
import ShutterSystem
import Testing

@testable import ShutterCamera

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct V4L2DeviceTests {
    static let videoCapture = UInt32(V4L2_CAP_VIDEO_CAPTURE)
    static let metaCapture = UInt32(V4L2_CAP_META_CAPTURE)
    static let streaming = UInt32(V4L2_CAP_STREAMING)
    static let deviceCaps = UInt32(V4L2_CAP_DEVICE_CAPS)

    static func capabilities(_ whole: UInt32, node: UInt32) -> V4L2Device.Capabilities {
        V4L2Device.Capabilities(
            driver: "uvcvideo", card: "Webcam", busInfo: "usb-1", capabilities: whole,
            deviceCapabilities: node)
    }

    @Test func aUVCMetadataNodeIsNotACaptureDevice() {
        // Both nodes of a UVC camera report the whole device's flags; only device_caps differs.
        let whole = Self.videoCapture | Self.metaCapture | Self.streaming | Self.deviceCaps
        #expect(Self.capabilities(whole, node: Self.videoCapture | Self.streaming).isStreamingVideoCapture)
        #expect(!Self.capabilities(whole, node: Self.metaCapture | Self.streaming).isStreamingVideoCapture)
    }

    @Test func oldDriversWithoutDeviceCapsAreJudgedByTheirCapabilities() {
        #expect(Self.capabilities(Self.videoCapture | Self.streaming, node: 0).isStreamingVideoCapture)
        #expect(
            !Self.capabilities(Self.videoCapture | UInt32(V4L2_CAP_READWRITE), node: 0)
                .isStreamingVideoCapture)
        #expect(
            !Self.capabilities(UInt32(V4L2_CAP_VIDEO_CAPTURE_MPLANE) | Self.streaming, node: 0)
                .isStreamingVideoCapture)
    }

    @Test func cStringsStopAtTheFirstNul() {
        var caps = v4l2_capability()
        withUnsafeMutableBytes(of: &caps.driver) { bytes in
            for (index, byte) in "uvcvideo".utf8.enumerated() { bytes[index] = byte }
        }
        #expect(cString(caps.driver) == "uvcvideo")
        withUnsafeMutableBytes(of: &caps.driver) { bytes in
            for index in bytes.indices { bytes[index] = UInt8(ascii: "a") }
        }
        #expect(cString(caps.driver) == String(repeating: "a", count: 16))
        #expect(cString(caps.card) == "")
    }

    @Test func aFileThatIsNotADeviceAnswersWithItsErrno() throws {
        // /dev/null opens like any node but knows no V4L2 ioctl.
        let device = try V4L2Device.open("/dev/null")
        #expect(device.descriptor >= 0)
        #expect(throws: CameraError.device(SystemError(errno: ENOTTY, call: "VIDIOC_QUERYCAP"))) {
            try device.capabilities()
        }
        // Enumerations end quietly on ENOTTY, as on a driver that does not implement them.
        #expect(try device.formats().isEmpty)
        #expect(try device.frameSizes(pixelFormat: cv4l2_pix_fmt_mjpeg()) == .discrete([]))
        #expect(
            try device.frameIntervals(pixelFormat: cv4l2_pix_fmt_mjpeg(), width: 640, height: 480) == .unknown
        )
        #expect(try device.frameInterval().isSettable == false)
        device.close()
        #expect(device.descriptor == -1)
        device.close()
    }
}
