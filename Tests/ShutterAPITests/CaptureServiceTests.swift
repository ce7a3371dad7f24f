import ShutterCamera
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterAPI

#if canImport(Glibc)
    import Glibc
#endif

/// The capture service with a fake camera on its real capture thread.
@Suite struct CaptureServiceTests {
    private let quiet = Logger(label: "test", level: .critical)
    private let unplugged = CameraError.device(SystemError(errno: ENODEV, call: "VIDIOC_DQBUF"))

    /// Polls `condition` until it holds or ten seconds pass (generous: tests run in parallel
    /// on two cores, and a starved poll must not fail a correct service).
    private func eventually(_ condition: () async -> Bool) async -> Bool {
        let deadline = SystemClock().monotonicNow().advanced(by: 10_000_000_000)
        while SystemClock().monotonicNow() < deadline {
            if await condition() { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    @Test func aSnapGetsAFrameCapturedAfterItAsked() async throws {
        let source = FakeCameraSource(
            mode: CameraMode(width: 64, height: 48, fps: 100), whenExhausted: .generateLive)
        let capture = try CaptureService(source: source, quality: 80, logger: quiet)
        try await capture.start()
        let asked = SystemClock().monotonicNow()
        let frame = try await capture.frame(capturedAtOrAfter: asked, timeoutMilliseconds: 2000)
        #expect(frame.capturedAt >= asked)
        #expect(try JPEGDecoder.header(of: frame.jpeg).width == 64)
        await capture.stop()
        #expect(source.stopCount >= 1)
    }

    @Test func framesNobodyWantsAreNotEncoded() async throws {
        let source = FakeCameraSource(
            mode: CameraMode(width: 64, height: 48, fps: 200), whenExhausted: .generateLive)
        let capture = try CaptureService(source: source, quality: 80, logger: quiet)
        try await capture.start()
        #expect(await eventually { capture.status.framesCaptured >= 10 })
        #expect(capture.status.framesEncoded == 0)
        await capture.stop()
    }

    @Test func anUnpluggedCameraShowsNoSignalAndIsReopened() async throws {
        let source = FakeCameraSource(
            mode: CameraMode(width: 64, height: 48, fps: 100), whenExhausted: .generateLive)
        let capture = try CaptureService(
            source: source, quality: 80, reopenIntervalMilliseconds: 50, logger: quiet)
        try await capture.start()
        #expect(await eventually { capture.status.framesCaptured > 0 })
        source.unplug(throwing: unplugged)
        #expect(await eventually { capture.status.failure != nil })
        #expect(capture.status.failure?.contains("No such device") == true)

        // Meanwhile snaps fail with the reason, commands are refused, and the preview is
        // the "no signal" frame.
        await #expect(throws: CaptureError.self) {
            try await capture.frame(
                capturedAtOrAfter: SystemClock().monotonicNow(), timeoutMilliseconds: 1000)
        }
        await #expect(throws: CaptureError.self) { try await capture.withCamera { $0.name } }
        let preview = try await capture.recentFrame(
            maxAgeNanoseconds: 0, now: SystemClock().monotonicNow(), timeoutMilliseconds: 1000)
        #expect(preview.sequence == 0, "the no-signal frame")
        #expect(try JPEGDecoder.header(of: preview.jpeg).width == 64)
        let startsWhileUnplugged = source.startCount

        // Retried until it returns, then it comes back by itself.
        #expect(await eventually { source.startCount >= startsWhileUnplugged + 2 })
        source.plugBackIn()
        #expect(await eventually { capture.status.failure == nil })
        #expect(capture.status.reopens == 1)
        let fresh = try await capture.frame(
            capturedAtOrAfter: SystemClock().monotonicNow(), timeoutMilliseconds: 2000)
        #expect(fresh.sequence > 0)
        await capture.stop()
    }

    @Test func aCameraThatCannotOpenAtStartIsRetried() async throws {
        let refused = CameraError.unsupported("permission denied: add the user to the video group")
        let source = FakeCameraSource(
            mode: CameraMode(width: 64, height: 48, fps: 100), whenExhausted: .generateLive)
        source.unplug(throwing: refused)
        let capture = try CaptureService(
            source: source, quality: 80, reopenIntervalMilliseconds: 50, logger: quiet)
        try await capture.start()
        #expect(await eventually { capture.status.failure?.contains("video group") == true })
        #expect(await eventually { source.startCount >= 3 })
        source.plugBackIn()
        #expect(await eventually { capture.status.failure == nil && capture.status.framesCaptured > 0 })
        await capture.stop()
    }

    @Test func commandsRunOnTheCaptureThread() async throws {
        let source = FakeCameraSource(
            name: "cam", mode: CameraMode(width: 64, height: 48, fps: 100), whenExhausted: .generateLive)
        let capture = try CaptureService(source: source, quality: 80, logger: quiet)
        try await capture.start()
        let (name, thread) = try await capture.withCamera { camera in (camera.name, OSThread.currentName) }
        #expect(name == "cam")
        #expect(thread == "shutter-capture")
        await capture.stop()
    }

    @Test func stopFailsWaiters() async throws {
        let source = FakeCameraSource(
            mode: CameraMode(width: 64, height: 48, fps: 1), whenExhausted: .generateLive)
        let capture = try CaptureService(source: source, quality: 80, logger: quiet)
        try await capture.start()
        let waiter = Task {
            try await capture.frame(
                capturedAtOrAfter: SystemClock().monotonicNow().advanced(by: 60_000_000_000),
                timeoutMilliseconds: 30000)
        }
        try await Task.sleep(for: .milliseconds(20))
        await capture.stop()
        await #expect(throws: CaptureError.stopped) { try await waiter.value }
    }

    @Test func anUnwantedCameraIdlesAndWakesForTheNextRequest() async throws {
        let source = FakeCameraSource(
            mode: CameraMode(width: 64, height: 48, fps: 100), whenExhausted: .generateLive)
        let capture = try CaptureService(
            source: source, quality: 80, idleAfterMilliseconds: 100, logger: quiet)
        try await capture.start()
        #expect(await eventually { capture.status.isIdle })
        #expect(source.stopCount == 1 && !source.isRunning)
        let asked = SystemClock().monotonicNow()
        let frame = try await capture.frame(capturedAtOrAfter: asked, timeoutMilliseconds: 5000)
        #expect(frame.capturedAt >= asked)
        #expect(source.startCount == 2)
        #expect(capture.status.failure == nil)
        await capture.stop()
    }

    @Test func anActiveJobKeepsTheCameraAwake() async throws {
        let source = FakeCameraSource(
            mode: CameraMode(width: 64, height: 48, fps: 100), whenExhausted: .generateLive)
        let capture = try CaptureService(
            source: source, quality: 80, idleAfterMilliseconds: 50, logger: quiet)
        capture.keepAwake(true)
        try await capture.start()
        #expect(await eventually { capture.status.framesCaptured >= 30 })
        #expect(!capture.status.isIdle && source.stopCount == 0)
        capture.keepAwake(false)
        #expect(await eventually { capture.status.isIdle })
        await capture.stop()
    }
}
