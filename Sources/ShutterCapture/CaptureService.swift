import ShutterCamera
import ShutterSystem
import Synchronization

/// The one owner of the camera: runs its capture thread, hands out frames, and runs
/// camera commands (controls) on that thread. Nothing else touches the `CameraSource`.
///
/// The capture thread opens the camera, reads frames, and when the camera fails
/// (unplugged, stalled, refused) closes it and reopens it every `reopenIntervalMilliseconds`
/// until it returns, showing a "no signal" frame meanwhile: HTTP keeps being served.
public actor CaptureService {
    private let shared: CaptureShared
    private let loop: CaptureLoop
    private var thread: OSThread?
    /// The stop in progress: `stop()` suspends while the thread ends, and the actor takes other
    /// calls meanwhile; a second `stop()` waits for this one, and `start()` waits before starting.
    private var stopping: Task<Void, Never>?
    /// The camera's name (a V4L2 camera's card name once it has been opened, its path before).
    public nonisolated var cameraName: String { shared.name }
    /// The camera's driver (`uvcvideo`; `Shutter` for the test pattern), for the pictures' EXIF `Make`.
    public nonisolated var cameraDriver: String { shared.driver }
    /// The program and version written as each stored picture's EXIF `Software`.
    public nonisolated let software: String
    /// The burned-in text, if any (`storedPicture` draws it on pictures when it is theirs to draw).
    nonisolated let overlay: CaptureOverlay?
    /// Draws stored pictures' text; nil unless pictures draw their own.
    nonisolated let pictureRenderer: PictureOverlayRenderer?
    /// The JPEG quality of pictures drawn at store time, the capture path's own.
    nonisolated let quality: Int

    /// `idleAfterMilliseconds` > 0 closes the camera after that long with nobody waiting for a
    /// frame and no job active; the next request opens it again (with its warm-up). Every wait
    /// (reopening, idling, a frame's timeout) is measured on `clock`.
    public init(
        source: sending any CameraSource, quality: Int, reopenIntervalMilliseconds: Int = 1000,
        idleAfterMilliseconds: Int = 0, orientation: Orientation = .identity, overlay: CaptureOverlay? = nil,
        clock: any Clock = SystemClock(), software: String = "shutterd", logger: Logger
    ) throws {
        self.overlay = overlay
        self.quality = quality
        pictureRenderer =
            overlay?.picturesDrawTheirOwn == true
            ? PictureOverlayRenderer(style: overlay!.style) { reason in
                logger.warning(
                    "overlay font cannot be read: drawing pictures' text with the built-in font",
                    ["reason": reason])
            } : nil
        let shared = CaptureShared(
            name: source.name, driver: source.driverName, mode: orientation.mode(source.mode),
            pixelFormat: source.pixelFormatName, clock: clock)
        self.shared = shared
        self.software = software
        loop = try CaptureLoop(
            source: source, encoder: try JPEGEncoder(quality: quality), shared: shared,
            reopenIntervalNanoseconds: UInt64(reopenIntervalMilliseconds) * 1_000_000,
            idleAfterNanoseconds: UInt64(max(0, idleAfterMilliseconds)) * 1_000_000, orientation: orientation,
            overlay: overlay, clock: clock, logger: logger)
    }

    /// Starts the capture thread, which opens the camera (and keeps trying if it cannot).
    public func start() async throws {
        await stopping?.value
        guard thread == nil else { return }
        shared.stopRequested.store(false, ordering: .relaxed)
        let loop = self.loop
        thread = try OSThread.spawn(name: "shutter-capture") { loop.run() }
    }

    /// Whether the capture thread runs (started and not stopped).
    var isStarted: Bool { thread != nil }

    /// Stops the capture thread and closes the camera; waiters get `CaptureError.stopped`.
    ///
    /// Waits for the thread without blocking a thread of the cooperative pool.
    public func stop() async {
        if let stopping { return await stopping.value }
        guard let thread else { return }
        self.thread = nil
        shared.stopRequested.store(true, ordering: .relaxed)
        shared.wakeup.signal()
        loop.interruptCamera()
        let stop = Task { await thread.finished() }
        stopping = stop
        await stop.value
        stopping = nil
        shared.exchange.fail(.stopped)
        shared.failPendingCommands(CaptureError.stopped)
    }

    /// The first frame captured at or after `instant` (a snap never returns a frame older than its request).
    public nonisolated func frame(capturedAtOrAfter instant: MonotonicInstant, timeoutMilliseconds: Int)
        async throws -> EncodedFrame
    {
        try await shared.exchange.frame(capturedAtOrAfter: instant, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The newest frame at most `maxAgeNanoseconds` old, else the next one; while the camera
    /// is gone, the "no signal" frame if `orNoSignal`, else the failure.
    ///
    /// A camera JPEG kept while nobody waited counts (`FrameExchange.keep`): it is the frame a
    /// wait would have been handed, so `POST /snap?max_age_ms` needs no wait for it.
    public nonisolated func recentFrame(
        maxAgeNanoseconds: UInt64, now: MonotonicInstant, timeoutMilliseconds: Int, orNoSignal: Bool = true
    ) async throws -> EncodedFrame {
        // A viewer gets the no-signal picture; a snap must fail instead of storing it.
        if orNoSignal, shared.exchange.failure != nil, let noSignal = shared.exchange.noSignalFrame {
            return noSignal
        }
        if let newest = shared.exchange.newest, now.nanoseconds(since: newest.capturedAt) <= maxAgeNanoseconds
        {
            shared.answeredFromHand.store(true, ordering: .relaxed)
            return newest
        }
        return try await shared.exchange.frame(
            capturedAtOrAfter: now, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// How `newestFrame` decides between the frame in hand and the next one, at the camera's rate.
    public nonisolated var newestFrameRule: NewestFrameRule {
        NewestFrameRule(framesPerSecond: shared.mode.fps)
    }

    /// The frame that answers "the newest frame" asked for at `now` without waiting: the "no
    /// signal" frame while the camera is gone, else the newest frame if `newestFrameRule`
    /// says it answers at once; nil when the request must wait (`newestFrame`).
    ///
    /// Never blocks: it takes one lock, so the event loop can call it.
    public nonisolated func newestFrameInHand(now: MonotonicInstant) -> EncodedFrame? {
        if shared.exchange.failure != nil, let noSignal = shared.exchange.noSignalFrame { return noSignal }
        guard let newest = shared.exchange.newest, newestFrameRule.answersAtOnce(newest, now: now) else {
            return nil
        }
        shared.answeredFromHand.store(true, ordering: .relaxed)
        return newest
    }

    /// "The newest frame" asked for at `now`: `newestFrameInHand` if there is one, else the next
    /// frame captured within the last interval, waited for up to `timeoutMilliseconds`.
    public nonisolated func newestFrame(now: MonotonicInstant, timeoutMilliseconds: Int) async throws
        -> EncodedFrame
    {
        if let inHand = newestFrameInHand(now: now) { return inHand }
        return try await shared.exchange.frame(
            capturedAtOrAfter: newestFrameRule.waitedFrameCapturedAtOrAfter(now: now),
            timeoutMilliseconds: timeoutMilliseconds)
    }

    /// Runs `body` with the camera on the capture thread, between two frames.
    ///
    /// This is how controls are read and set without a second owner of the device.
    /// Throws `CaptureError.cameraUnavailable` while the camera is not open.
    public nonisolated func withCamera<T: Sendable>(
        _ body: @escaping @Sendable (any CameraSource) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            shared.enqueue { source, failure in
                if let failure {
                    continuation.resume(throwing: failure)
                    return
                }
                continuation.resume(with: Result { try body(source) })
            }
        }
    }

    /// Sends every frame, and the "no signal" frame while the camera is gone, to `observer` on
    /// the capture thread while `setLiveDemand(true)`; it must return quickly.
    nonisolated func setFrameObserver(_ observer: FrameExchange.Observer?) {
        shared.exchange.setObserver(observer)
    }

    /// Whether live viewers want every frame (encoded, and opened from idle, for them).
    nonisolated func setLiveDemand(_ wanted: Bool) {
        shared.exchange.setLiveDemand(wanted)
    }

    /// Whether live viewers want every frame now.
    nonisolated var hasLiveDemand: Bool { shared.exchange.hasLiveDemand }

    /// The "no signal" frame while the camera is failing, else nil.
    nonisolated var currentNoSignalFrame: EncodedFrame? {
        shared.exchange.failure != nil ? shared.exchange.noSignalFrame : nil
    }

    /// Keeps the camera open while `awake` (an active job), whatever `idleAfterMilliseconds` says.
    public nonisolated func keepAwake(_ awake: Bool) {
        shared.keepAwake.store(awake, ordering: .relaxed)
        if awake { shared.wakeup.signal() }
    }

    /// Calls `handler` on the capture thread with each phase the capture thread enters, and the
    /// failure that stands at that moment; it must return at once. Until the subscription ends.
    public nonisolated func observePhases(
        _ handler: @escaping @Sendable (CapturePhase, CaptureError?) -> Void
    ) -> Broadcast<CapturePhase>.Subscription {
        shared.phase.changes.subscribe { [shared] phase in handler(phase, shared.exchange.failure) }
    }

    /// Returns once the capture thread is in `phase`: at once if it is now, else when it next
    /// enters it (a phase entered and left before the call is not seen).
    public nonisolated func reached(_ phase: CapturePhase) async {
        await shared.phase.reached(phase)
    }

    /// The camera's state now.
    /// How long frames took to encode, for `/metrics`.
    public nonisolated var encodeTime: LatencyHistogram { shared.counters.encodeTime }

    public nonisolated var status: CameraStatus {
        CameraStatus(
            name: cameraName, mode: shared.mode, pixelFormat: shared.pixelFormat,
            framesCaptured: shared.counters.framesCaptured,
            framesEncoded: shared.counters.framesEncoded, reopens: shared.counters.cameraReopens,
            corruptFrames: shared.counters.corruptFrames,
            warmupFramesDropped: shared.counters.warmupFramesDropped,
            failure: shared.exchange.failure, phase: shared.phase.current)
    }
}
