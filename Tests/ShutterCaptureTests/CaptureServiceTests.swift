import ShutterCamera
import ShutterSystem
import ShutterTestSupport
import Synchronization
import Testing

@testable import ShutterCapture

#if canImport(Glibc)
    import Glibc
#endif

/// The capture service on its real capture thread, with a fake camera paced on virtual time:
/// frames, reopen waits, idling and frame timeouts move only when the test advances the clock.
// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct CaptureServiceTests {
    private let quiet = Logger(label: "test", level: .critical)
    private let unplugged = CameraError.device(SystemError(errno: ENODEV, call: "VIDIOC_DQBUF"))

    /// A service over a paced fake camera at `fps`, both on one manual clock.
    private func makeCapture(
        name: String = "fake", fps: Int = 100, reopenIntervalMilliseconds: Int = 1000,
        idleAfterMilliseconds: Int = 0
    ) throws -> (CaptureService, FakeCameraSource, ManualClock) {
        let clock = ManualClock()
        let source = FakeCameraSource(
            name: name, mode: CameraMode(width: 64, height: 48, fps: fps), whenExhausted: .paced, clock: clock
        )
        let capture = try CaptureService(
            source: source, quality: 80, reopenIntervalMilliseconds: reopenIntervalMilliseconds,
            idleAfterMilliseconds: idleAfterMilliseconds, clock: clock, logger: quiet)
        return (capture, source, clock)
    }

    /// Lets the camera deliver `count` frames, and returns once the capture thread waits again.
    private func deliver(_ count: UInt64, _ source: FakeCameraSource, _ clock: ManualClock, sleepers: Int = 1)
        async
    {
        await clock.sleepers(atLeast: sleepers)
        clock.advance(by: count * source.frameInterval)
        await clock.sleepers(atLeast: sleepers)
    }

    @Test func aSnapGetsTheFirstFrameCapturedAfterItAsked() async throws {
        let (capture, source, clock) = try makeCapture()
        try await capture.start()
        await deliver(3, source, clock)
        let asked = clock.monotonicNow()
        let waiter = Task { try await capture.frame(capturedAtOrAfter: asked, timeoutMilliseconds: 2000) }
        // The camera's wait and the waiter's timeout.
        await clock.sleepers(atLeast: 2)
        clock.advance(by: source.frameInterval)
        let frame = try await waiter.value
        #expect(frame.capturedAt == asked.advanced(by: source.frameInterval))
        #expect(frame.sequence == 4)
        #expect(try JPEGDecoder.header(of: frame.jpeg).width == 64)
        await capture.stop()
        #expect(source.stopCount == 1)
    }

    @Test func framesNobodyWantsAreNotEncoded() async throws {
        let (capture, source, clock) = try makeCapture()
        try await capture.start()
        await deliver(10, source, clock)
        #expect(capture.status.framesCaptured == 10)
        #expect(capture.status.framesEncoded == 0)
        await capture.stop()
    }

    @Test func cameraJPEGsNobodyWaitsForAreKeptAsTheNewestFrame() async throws {
        let (capture, source, clock) = try makeCapture()
        #expect(capture.newestFrameInHand(now: clock.monotonicNow()) == nil, "no frame yet")
        try await capture.start()
        await deliver(3, source, clock)
        let received = clock.monotonicNow()
        let inHand = try #require(capture.newestFrameInHand(now: received))
        #expect(inHand.sequence == 3)
        #expect(inHand.receivedAt == received)
        #expect(capture.status.framesEncoded == 0, "kept, not handed to anyone")
        await capture.stop()
        // With no frame coming any more, it answers for an interval and a half after it arrived
        // (stopping may hand over one more frame, received at the same instant).
        let rule = capture.newestFrameRule
        #expect(capture.newestFrameInHand(now: received.advanced(by: rule.maximumAgeNanoseconds)) != nil)
        #expect(capture.newestFrameInHand(now: received.advanced(by: rule.maximumAgeNanoseconds + 1)) == nil)
    }

    @Test func aSnapWithAMaximumAgeTakesAKeptFrameWithoutWaiting() async throws {
        let (capture, source, clock) = try makeCapture()
        try await capture.start()
        await deliver(3, source, clock)
        let now = clock.monotonicNow()
        // Frame 3 was kept (nobody waited), captured at `now`: young enough for 5 ms, at once.
        let kept = try await capture.recentFrame(
            maxAgeNanoseconds: 5_000_000, now: now, timeoutMilliseconds: 0)
        #expect(kept.sequence == 3)
        #expect(capture.status.framesEncoded == 0)
        // Too old for a younger limit: the next frame is waited for.
        let later = now.advanced(by: source.frameInterval / 2)
        let waiter = Task {
            try await capture.recentFrame(maxAgeNanoseconds: 1_000_000, now: later, timeoutMilliseconds: 2000)
        }
        await clock.sleepers(atLeast: 2)
        clock.advance(by: source.frameInterval)
        #expect(try await waiter.value.sequence == 4)
        await capture.stop()
    }

    @Test func framesThatNeedWorkAreNotKeptForNobody() async throws {
        // Turned, every camera JPEG would cost a transform: none is made until someone waits.
        let clock = ManualClock()
        let source = FakeCameraSource(
            mode: CameraMode(width: 64, height: 48, fps: 100), whenExhausted: .paced, clock: clock)
        let capture = try CaptureService(
            source: source, quality: 80, orientation: Orientation(rotation: 90, flip: .none)!, clock: clock,
            logger: quiet)
        try await capture.start()
        await deliver(3, source, clock)
        #expect(capture.newestFrameInHand(now: clock.monotonicNow()) == nil)
        await capture.stop()
    }

    @Test func theNewestFrameIsWaitedForWhenNoneIsInHand() async throws {
        let (capture, source, clock) = try makeCapture()
        try await capture.start()
        let asked = clock.monotonicNow()
        let waiter = Task { try await capture.newestFrame(now: asked, timeoutMilliseconds: 2000) }
        // The camera's wait and the waiter's timeout.
        await clock.sleepers(atLeast: 2)
        clock.advance(by: source.frameInterval)
        #expect(try await waiter.value.sequence == 1)
        // Now in hand: the next request is answered from it, with no wait.
        #expect(
            try await capture.newestFrame(now: clock.monotonicNow(), timeoutMilliseconds: 0).sequence == 1)
        await capture.stop()
    }

    @Test func aWaiterTimesOutOnTheClock() async throws {
        // A camera that delivers no frame: the first one is a minute away.
        let (capture, _, clock) = try makeCapture(fps: 1)
        try await capture.start()
        let waiter = Task {
            try await capture.frame(capturedAtOrAfter: clock.monotonicNow(), timeoutMilliseconds: 300)
        }
        await clock.sleepers(atLeast: 2)
        clock.advance(by: 299_000_000)
        clock.advance(by: 1_000_000)
        await #expect(throws: CaptureError.timedOut(milliseconds: 300)) { try await waiter.value }
        await capture.stop()
    }

    @Test func anUnpluggedCameraShowsNoSignalAndIsReopened() async throws {
        let (capture, source, clock) = try makeCapture(reopenIntervalMilliseconds: 50)
        try await capture.start()
        await deliver(1, source, clock)
        source.unplug(throwing: unplugged)
        // The next frame fails; the capture thread then waits to reopen.
        await deliver(1, source, clock)
        #expect(capture.status.phase == .failed)
        let failure = try #require(capture.status.failure)
        #expect(failure == .cameraUnavailable(unplugged, camera: "fake"))
        #expect(failure.description.contains("No such device"))

        // Meanwhile snaps fail with the reason, commands are refused, and the preview is
        // the "no signal" frame.
        await #expect(throws: failure) {
            try await capture.frame(capturedAtOrAfter: clock.monotonicNow(), timeoutMilliseconds: 1000)
        }
        await #expect(throws: failure) { try await capture.withCamera { $0.name } }
        let preview = try await capture.recentFrame(
            maxAgeNanoseconds: 0, now: clock.monotonicNow(), timeoutMilliseconds: 1000)
        #expect(preview.sequence == 0, "the no-signal frame")
        #expect(try JPEGDecoder.header(of: preview.jpeg).width == 64)

        // Retried every reopen interval until it returns, then it comes back by itself.
        let startsWhileUnplugged = source.startCount
        for _ in 0..<2 {
            await clock.sleepers(atLeast: 1)
            clock.advance(by: 50_000_000)
        }
        await clock.sleepers(atLeast: 1)
        #expect(source.startCount == startsWhileUnplugged + 2)
        source.plugBackIn()
        clock.advance(by: 50_000_000)
        await capture.reached(.streaming)
        await deliver(1, source, clock)
        #expect(capture.status.failure == nil)
        #expect(capture.status.reopens == 1)
        let asked = clock.monotonicNow()
        let fresh = Task { try await capture.frame(capturedAtOrAfter: asked, timeoutMilliseconds: 2000) }
        await clock.sleepers(atLeast: 2)
        clock.advance(by: source.frameInterval)
        #expect(try await fresh.value.sequence > 0)
        await capture.stop()
    }

    @Test func aCameraThatCannotOpenAtStartIsRetried() async throws {
        let refused = CameraError.permissionDenied("/dev/video0", message: "add the user to the video group")
        let (capture, source, clock) = try makeCapture(reopenIntervalMilliseconds: 50)
        source.unplug(throwing: refused)
        try await capture.start()
        await capture.reached(.failed)
        #expect(capture.status.failure?.description.contains("video group") == true)
        for _ in 0..<2 {
            await clock.sleepers(atLeast: 1)
            clock.advance(by: 50_000_000)
        }
        await clock.sleepers(atLeast: 1)
        #expect(source.startCount == 3)
        source.plugBackIn()
        clock.advance(by: 50_000_000)
        await capture.reached(.streaming)
        await deliver(1, source, clock)
        #expect(capture.status.failure == nil && capture.status.framesCaptured == 1)
        await capture.stop()
    }

    @Test func theNoSignalFrameIsRedrawnAboutOnceASecond() async throws {
        let (capture, source, clock) = try makeCapture(reopenIntervalMilliseconds: 10_000)
        let drawn = LockedValue<[Int64]>([])
        capture.setFrameObserver { frame in
            if frame.sequence == 0 { drawn.withLock { $0.append(frame.wallMilliseconds) } }
        }
        capture.setLiveDemand(true)
        source.unplug(throwing: unplugged)
        try await capture.start()
        for _ in 0..<3 {
            await clock.sleepers(atLeast: 1)
            clock.advance(by: CaptureLoop.noSignalRefreshNanoseconds)
        }
        await clock.sleepers(atLeast: 1)
        let times = drawn.withLock { $0 }
        // At once for the failure, then one per refresh: the picture's clock keeps moving.
        #expect(times.count == 4)
        #expect(zip(times, times.dropFirst()).allSatisfy { $1 - $0 == 950 })
        await capture.stop()
    }

    @Test func commandsRunOnTheCaptureThreadBetweenFrames() async throws {
        let (capture, source, clock) = try makeCapture(name: "cam")
        try await capture.start()
        let done = Atomic<Bool>(false)
        let command = Task {
            defer { done.store(true, ordering: .relaxed) }
            return try await capture.withCamera { camera in (camera.name, OSThread.currentName) }
        }
        // One frame at a time until the command has run between two of them.
        while !done.load(ordering: .relaxed) { await deliver(1, source, clock) }
        let (name, thread) = try await command.value
        #expect(name == "cam")
        #expect(thread == "shutter-capture")
        await capture.stop()
    }

    @Test func stopEndsAWaitForTheCameraAndFailsWaiters() async throws {
        let (capture, _, clock) = try makeCapture(fps: 1)
        try await capture.start()
        let waiter = Task {
            try await capture.frame(
                capturedAtOrAfter: clock.monotonicNow().advanced(by: 60_000_000_000),
                timeoutMilliseconds: 30_000)
        }
        await clock.sleepers(atLeast: 2)
        // The camera's next frame is a second away on a clock that does not move: stop must not wait for it.
        await capture.stop()
        await #expect(throws: CaptureError.stopped) { try await waiter.value }
        #expect(capture.status.phase == .stopped)
    }

    @Test func anUnwantedCameraIdlesAndWakesForTheNextRequest() async throws {
        let (capture, source, clock) = try makeCapture(idleAfterMilliseconds: 100)
        try await capture.start()
        await clock.sleepers(atLeast: 1)
        clock.advance(by: 150_000_000)
        await capture.reached(.idle)
        #expect(capture.status.isIdle)
        #expect(source.stopCount == 1 && !source.isRunning)
        let asked = clock.monotonicNow()
        let waiter = Task { try await capture.frame(capturedAtOrAfter: asked, timeoutMilliseconds: 5000) }
        // The waiter's timeout, and the reopened camera's first frame.
        await clock.sleepers(atLeast: 2)
        clock.advance(by: source.frameInterval)
        let frame = try await waiter.value
        #expect(frame.capturedAt >= asked)
        #expect(source.startCount == 2)
        #expect(capture.status.failure == nil && capture.status.phase == .streaming)
        await capture.stop()
    }

    /// Lets the camera deliver `count` frames; false if it went idle instead of waiting for the
    /// next one. An idle camera never sleeps on the clock, so this polls (bounded) rather than
    /// wait for a sleeper that would never come.
    private func deliverUnlessIdle(
        _ count: UInt64, _ capture: CaptureService, _ source: FakeCameraSource, _ clock: ManualClock
    ) async -> Bool {
        await clock.sleepers(atLeast: 1)
        clock.advance(by: count * source.frameInterval)
        for _ in 0..<5000 {
            if capture.status.isIdle { return false }
            if clock.sleeperCount >= 1 { return true }
            usleep(1000)
        }
        return false
    }

    @Test func requestsAnsweredFromAFrameInHandKeepTheCameraAwake() async throws {
        // Nobody waits (each request is answered from the kept frame), yet someone wants frames:
        // the camera must not idle under a client polling the still or snapping with max_age_ms.
        let (capture, source, clock) = try makeCapture(idleAfterMilliseconds: 50)
        try await capture.start()
        for round in 0..<8 {
            let awake = await deliverUnlessIdle(3, capture, source, clock)
            #expect(awake, "idle in round \(round), 30 ms after the last request")
            guard awake else { break }
            let now = clock.monotonicNow()
            if round.isMultiple(of: 2) {
                #expect(capture.newestFrameInHand(now: now) != nil)
            } else {
                _ = try await capture.recentFrame(
                    maxAgeNanoseconds: 5_000_000, now: now, timeoutMilliseconds: 0)
            }
        }
        // 8 x 30 ms, well past the 50 ms idle time, with no waiter all along.
        #expect(capture.status.framesEncoded == 0)
        #expect(source.stopCount == 0)
        guard source.stopCount == 0 else { return await capture.stop() }
        // Once nobody asks, it idles: the last answer counts once, then 50 ms pass with none.
        clock.advance(by: 60_000_000)
        await clock.sleepers(atLeast: 1)
        clock.advance(by: 60_000_000)
        await capture.reached(.idle)
        #expect(source.stopCount == 1)
        await capture.stop()
    }

    @Test func anActiveJobKeepsTheCameraAwake() async throws {
        let (capture, source, clock) = try makeCapture(idleAfterMilliseconds: 50)
        capture.keepAwake(true)
        try await capture.start()
        await deliver(30, source, clock)
        #expect(capture.status.framesCaptured == 30)
        #expect(!capture.status.isIdle && source.stopCount == 0)
        capture.keepAwake(false)
        clock.advance(by: 60_000_000)
        await capture.reached(.idle)
        #expect(source.stopCount == 1)
        await capture.stop()
    }

    /// `stop()` suspends while the thread ends and the actor takes other calls meanwhile: a
    /// `start()` then must start again once the stop is over, not be taken for a running service.
    @Test func aStartDuringAStopStartsAgainAfterIt() async throws {
        let source = HeldStopCameraSource()
        let capture = try CaptureService(source: source, quality: 80, clock: ManualClock(), logger: quiet)
        try await capture.start()
        await capture.reached(.streaming)
        let stopping = Task { await capture.stop() }
        #expect(try await Self.waitOnThread(source.stopEntered))
        let starting = Task { try await capture.start() }
        source.releaseStop.signal()
        await stopping.value
        try await starting.value
        let restarted = await capture.isStarted
        #expect(restarted, "start() during the stop started the thread again after it")
        guard restarted else { return }
        await capture.reached(.streaming)
        #expect(source.startCount == 2, "the camera is opened again")
        await capture.stop()
        #expect(capture.status.phase == .stopped)
    }

    /// Two stops at once both return once the thread has ended, which is joined once (a second
    /// `pthread_join` is undefined behaviour; the thread sanitizer aborts on it).
    @Test func twoStopsAtOnceEndTheThreadOnce() async throws {
        let source = HeldStopCameraSource()
        let capture = try CaptureService(source: source, quality: 80, clock: ManualClock(), logger: quiet)
        try await capture.start()
        await capture.reached(.streaming)
        let first = Task { await capture.stop() }
        #expect(try await Self.waitOnThread(source.stopEntered))
        let second = Task { await capture.stop() }
        source.releaseStop.signal()
        await first.value
        await second.value
        #expect(source.stopCount == 1)
        #expect(capture.status.phase == .stopped)
    }

    /// Waits for `wakeup` on a thread of its own (never on the pool); false after 10 s.
    private static func waitOnThread(_ wakeup: ThreadWakeup) async throws -> Bool {
        try await onDedicatedThread {
            wakeup.wait(untilMonotonic: SystemClock().monotonicNow().advanced(by: 10_000_000_000))
        }
    }
}
