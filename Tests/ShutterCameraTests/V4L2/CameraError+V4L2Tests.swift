import ShutterSystem
import Testing

@testable import ShutterCamera

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct CameraErrorV4L2Tests {
    static let path = "/dev/video0"

    static func classify(_ errno: Int32, _ call: String) -> CameraError {
        CameraError.classifying(SystemError(errno: errno, call: call), path: path)
    }

    @Test func permissionProblemsWhenOpeningSayHowToFixThem() {
        guard case .permissionDenied(let path, let message) = Self.classify(EACCES, "open") else {
            Issue.record("expected permissionDenied")
            return
        }
        #expect(path == Self.path)
        #expect(message.contains("usermod -aG video"))
        #expect(message.contains("'video' group"))
        #expect(
            Self.classify(EACCES, "VIDIOC_G_CTRL")
                == .device(SystemError(errno: EACCES, call: "VIDIOC_G_CTRL")))
    }

    @Test func busyFromAnyCallMeansAnotherProgram() {
        for call in ["open", "VIDIOC_REQBUFS", "VIDIOC_STREAMON", "VIDIOC_S_FMT"] {
            #expect(Self.classify(EBUSY, call) == .busy(Self.path, "another program is using the camera"))
        }
    }

    @Test func missingAndUnpluggedCamerasAreDisconnected() {
        for (code, call) in [
            (ENOENT, "open"), (ENODEV, "open"), (ENXIO, "open"), (ENODEV, "VIDIOC_DQBUF"),
            (EIO, "VIDIOC_DQBUF"),
            (EIO, "VIDIOC_QBUF"), (ENODEV, "VIDIOC_QUERYCAP"),
        ] {
            guard case .disconnected(let message) = Self.classify(code, call) else {
                Issue.record("\(call) errno \(code) should be disconnected")
                continue
            }
            #expect(message.hasPrefix(Self.path))
        }
    }

    @Test func otherFailuresKeepTheirErrno() {
        #expect(
            Self.classify(EIO, "VIDIOC_S_CTRL") == .device(SystemError(errno: EIO, call: "VIDIOC_S_CTRL")))
        #expect(
            Self.classify(ENOTTY, "VIDIOC_QUERYCAP")
                == .device(SystemError(errno: ENOTTY, call: "VIDIOC_QUERYCAP")))
        #expect(
            Self.classify(ENOENT, "VIDIOC_G_FMT") == .device(SystemError(errno: ENOENT, call: "VIDIOC_G_FMT"))
        )
    }

    @Test func newCasesDescribeThemselves() {
        #expect(CameraError.stalled("no frame").description == "camera stalled: no frame")
        #expect(CameraError.disconnected("gone").description == "camera disconnected: gone")
        #expect(CameraError.busy("/dev/video0", "in use").description == "camera /dev/video0 is busy: in use")
        #expect(
            CameraError.permissionDenied("/dev/video0", message: "fix it").description
                == "camera /dev/video0: permission denied: fix it")
        #expect(CameraError.invalidControl("gain").description == "camera control: gain")
    }
}
