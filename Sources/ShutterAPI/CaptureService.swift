import ShutterCamera
import ShutterSystem
import Synchronization

/// Counters the capture thread updates and `/status` reads.
public final class CaptureCounters: Sendable {
    // Relaxed atomics: each counter is read alone, for display; no ordering is implied.
    let captured = Atomic<UInt64>(0)
    let encoded = Atomic<UInt64>(0)
    let failures = Atomic<UInt64>(0)
    let reopens = Atomic<UInt64>(0)
    let corrupt = Atomic<UInt64>(0)
    let warmupDropped = Atomic<UInt64>(0)

    public var framesCaptured: UInt64 { captured.load(ordering: .relaxed) }
    public var framesEncoded: UInt64 { encoded.load(ordering: .relaxed) }
    public var captureFailures: UInt64 { failures.load(ordering: .relaxed) }
    public var cameraReopens: UInt64 { reopens.load(ordering: .relaxed) }
    /// Damaged frames the camera delivered and capture skipped.
    public var corruptFrames: UInt64 { corrupt.load(ordering: .relaxed) }
    /// Frames dropped after each open while exposure settled.
    public var warmupFramesDropped: UInt64 { warmupDropped.load(ordering: .relaxed) }
}

/// A snapshot of the camera for `/status` and `/healthz`.
public struct CameraStatus: Sendable {
    public var name: String
    public var mode: CameraMode
    /// The pixel format the camera delivers (`mjpeg` is stored as sent; the others are encoded).
    public var pixelFormat: String
    public var framesCaptured: UInt64
    public var framesEncoded: UInt64
    public var reopens: UInt64
    public var corruptFrames: UInt64
    public var warmupFramesDropped: UInt64
    /// Nil while frames flow; otherwise why they do not.
    public var failure: String?
    /// Whether the camera is closed because nobody needs it (`idle_after_s`).
    public var isIdle: Bool
}

/// The one owner of the camera: runs its capture thread, hands out frames, and runs
/// camera commands (controls) on that thread. Nothing else touches the `CameraSource`.
///
/// The capture thread opens the camera, reads frames, and when the camera fails
/// (unplugged, stalled, refused) closes it and reopens it every `reopenIntervalMilliseconds`
/// until it returns, showing a "no signal" frame meanwhile: HTTP keeps being served.
public actor CaptureService {
    private let shared: CaptureShared
    private let context: CaptureLoop
    private var thread: OSThread?
    /// The camera's name (a V4L2 camera's card name once it has been opened, its path before).
    public nonisolated var cameraName: String { shared.name }

    /// `idleAfterMilliseconds` > 0 closes the camera after that long with nobody waiting for a
    /// frame and no job active; the next request opens it again (with its warm-up).
    public init(
        source: sending any CameraSource, quality: Int, reopenIntervalMilliseconds: Int = 1000,
        idleAfterMilliseconds: Int = 0, logger: Logger
    ) throws {
        let shared = CaptureShared(name: source.name, mode: source.mode, pixelFormat: source.pixelFormatName)
        self.shared = shared
        context = CaptureLoop(
            source: source, encoder: try JPEGEncoder(quality: quality), shared: shared,
            reopenIntervalNanoseconds: UInt64(reopenIntervalMilliseconds) * 1_000_000,
            idleAfterNanoseconds: UInt64(max(0, idleAfterMilliseconds)) * 1_000_000, logger: logger)
    }

    /// Starts the capture thread, which opens the camera (and keeps trying if it cannot).
    public func start() throws {
        guard thread == nil else { return }
        shared.stopRequested.store(false, ordering: .relaxed)
        let context = self.context
        thread = try OSThread.spawn(name: "shutter-capture") { context.run() }
    }

    /// Stops the capture thread and closes the camera; waiters get `CaptureError.stopped`.
    public func stop() {
        guard let thread else { return }
        shared.stopRequested.store(true, ordering: .relaxed)
        thread.join()
        self.thread = nil
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
    public nonisolated func recentFrame(
        maxAgeNanoseconds: UInt64, now: MonotonicInstant, timeoutMilliseconds: Int, orNoSignal: Bool = true
    ) async throws -> EncodedFrame {
        // A viewer gets the no-signal picture; a snap must fail instead of storing it.
        if orNoSignal, shared.exchange.failure != nil, let noSignal = shared.exchange.noSignalFrame {
            return noSignal
        }
        if let latest = shared.exchange.latest, now.nanoseconds(since: latest.capturedAt) <= maxAgeNanoseconds
        {
            return latest
        }
        return try await shared.exchange.frame(
            capturedAtOrAfter: now, timeoutMilliseconds: timeoutMilliseconds)
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

    /// The "no signal" frame while the camera is failing, else nil.
    nonisolated var currentNoSignalFrame: EncodedFrame? {
        shared.exchange.failure != nil ? shared.exchange.noSignalFrame : nil
    }

    /// Keeps the camera open while `awake` (an active job), whatever `idleAfterMilliseconds` says.
    public nonisolated func keepAwake(_ awake: Bool) {
        shared.keepAwake.store(awake, ordering: .relaxed)
    }

    /// The camera's state now.
    public nonisolated var status: CameraStatus {
        CameraStatus(
            name: cameraName, mode: shared.mode, pixelFormat: shared.pixelFormat,
            framesCaptured: shared.counters.framesCaptured,
            framesEncoded: shared.counters.framesEncoded, reopens: shared.counters.cameraReopens,
            corruptFrames: shared.counters.corruptFrames,
            warmupFramesDropped: shared.counters.warmupFramesDropped,
            failure: shared.exchange.failure.map(Self.describe),
            isIdle: shared.isIdle.load(ordering: .relaxed))
    }

    static func describe(_ error: CaptureError) -> String {
        switch error {
        case .timedOut(let ms): return "the camera delivered no frame within \(ms) ms"
        case .cameraUnavailable(let reason): return reason
        case .stopped: return "capture is stopped"
        }
    }
}

/// What the actor and the capture thread share; every field is locked or atomic.
private final class CaptureShared: Sendable {
    typealias Command = @Sendable (any CameraSource, (any Error)?) -> Void

    let exchange = FrameExchange()
    let counters = CaptureCounters()
    let stopRequested = Atomic<Bool>(false)
    /// Set by the job service while any job is active.
    let keepAwake = Atomic<Bool>(false)
    /// Set by the capture thread while the camera is closed for idleness.
    let isIdle = Atomic<Bool>(false)
    // Guards the negotiated mode (written by the capture thread after each open) and the
    // command queue (filled by request tasks, drained by the capture thread between frames).
    private let state: Mutex<(name: String, mode: CameraMode, pixelFormat: String, commands: [Command])>

    init(name: String, mode: CameraMode, pixelFormat: String) {
        state = Mutex((name, mode, pixelFormat, []))
    }

    var name: String {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }

    var mode: CameraMode {
        get { state.withLock { $0.mode } }
        set { state.withLock { $0.mode = newValue } }
    }

    var pixelFormat: String {
        get { state.withLock { $0.pixelFormat } }
        set { state.withLock { $0.pixelFormat = newValue } }
    }

    var isStopping: Bool { stopRequested.load(ordering: .relaxed) }

    func enqueue(_ command: @escaping Command) {
        state.withLock { $0.commands.append(command) }
        // Once stopping, the capture thread may already have drained its queue for the
        // last time: answer here rather than leave the command waiting forever.
        if isStopping { failPendingCommands(CaptureError.stopped) }
    }

    var hasCommands: Bool { state.withLock { !$0.commands.isEmpty } }

    func takeCommands() -> [Command] {
        state.withLock { state in
            let commands = state.commands
            state.commands.removeAll()
            return commands
        }
    }

    /// Answers every queued command with `error` (used when the camera is gone or stopping).
    func failPendingCommands(_ error: any Error) {
        for command in takeCommands() { command(UnavailableCamera.shared, error) }
    }
}

/// Stands in for the camera when a command is failed without running.
private final class UnavailableCamera: CameraSource, @unchecked Sendable {
    // @unchecked Sendable: stateless.
    static let shared = UnavailableCamera()
    let name = "unavailable"
    let mode = CameraMode(width: 0, height: 0, fps: 1)
    func start() throws { throw CameraError.notStarted }
    func stop() {}
    func nextFrame() throws -> RawFrame { throw CameraError.notStarted }
}

/// The capture thread's loop: open, read frames, encode those someone waits for, publish;
/// on failure, close and reopen until the camera returns.
private final class CaptureLoop: @unchecked Sendable {
    // @unchecked Sendable: created by the actor, then used only by the capture thread.
    let source: any CameraSource
    let encoder: JPEGEncoder
    let shared: CaptureShared
    let reopenIntervalNanoseconds: UInt64
    let idleAfterNanoseconds: UInt64
    let logger: Logger
    let clock = SystemClock()
    /// When someone last wanted a frame, ran a command, or kept the camera awake.
    private var lastDemand = SystemClock().monotonicNow()
    private var lastFailure: String?
    /// When the "no signal" frame was last drawn, so live viewers get one about once a second.
    private var lastNoSignal: (at: MonotonicInstant, reason: String)?
    /// The source's own drop counters, if it keeps any (looked up once, not per frame).
    private let dropCounting: (any FrameDropCounting)?

    init(
        source: any CameraSource, encoder: JPEGEncoder, shared: CaptureShared,
        reopenIntervalNanoseconds: UInt64, idleAfterNanoseconds: UInt64, logger: Logger
    ) {
        self.idleAfterNanoseconds = idleAfterNanoseconds
        self.source = source
        self.dropCounting = source as? any FrameDropCounting
        self.encoder = encoder
        self.shared = shared
        self.reopenIntervalNanoseconds = reopenIntervalNanoseconds
        self.logger = logger
    }

    func run() {
        while !shared.isStopping {
            if open() {
                let outcome = capture()
                source.stop()
                if shared.isStopping { break }
                if outcome == .idle {
                    waitForDemand()
                    continue
                }
            }
            waitBeforeReopening()
        }
        shared.failPendingCommands(CaptureError.stopped)
    }

    /// Opens the camera; on failure records why (logged once until it changes).
    private func open() -> Bool {
        do {
            try source.start()
            shared.name = source.name
            shared.mode = source.mode
            shared.pixelFormat = source.pixelFormatName
            let mode = source.mode
            if lastFailure != nil {
                shared.counters.reopens.add(1, ordering: .relaxed)
                logger.notice("camera recovered", ["camera": source.name])
                lastFailure = nil
                lastNoSignal = nil
            }
            logger.info(
                "camera started",
                [
                    "camera": source.name, "size": "\(mode.width)x\(mode.height)", "fps": String(mode.fps),
                    "format": source.pixelFormatName,
                ])
            return true
        } catch {
            failed(error)
            return false
        }
    }

    /// Why `capture()` returned.
    private enum CaptureOutcome {
        case stopping, failed, idle
    }

    /// Reads frames until the camera fails, capture stops, or nobody has needed a frame for
    /// `idleAfterNanoseconds`.
    private func capture() -> CaptureOutcome {
        lastDemand = clock.monotonicNow()
        while !shared.isStopping {
            if shared.hasCommands || shared.keepAwake.load(ordering: .relaxed) || shared.exchange.wantsFrame()
            {
                lastDemand = clock.monotonicNow()
            } else if idleAfterNanoseconds > 0
                && clock.monotonicNow().nanoseconds(since: lastDemand) > idleAfterNanoseconds
            {
                logger.info("camera idle: closing it until a frame is wanted", ["camera": source.name])
                return .idle
            }
            runCommands()
            do {
                let frame = try source.nextFrame()
                shared.counters.captured.add(1, ordering: .relaxed)
                if let dropCounting {
                    shared.counters.corrupt.store(dropCounting.corruptFrames, ordering: .relaxed)
                    shared.counters.warmupDropped.store(dropCounting.warmupFramesDropped, ordering: .relaxed)
                }
                if shared.exchange.failure != nil { shared.exchange.clearFailure() }
                guard shared.exchange.wantsFrame() else { continue }
                let start = clock.monotonicNow()
                let jpeg: [UInt8]
                switch frame.image {
                case .jpeg(let bytes): jpeg = bytes
                case .yuv(let image): jpeg = try encoder.encode(image)
                }
                shared.counters.encoded.add(1, ordering: .relaxed)
                shared.exchange.publish(
                    EncodedFrame(
                        sequence: frame.sequence, capturedAt: frame.capturedAt,
                        wallMilliseconds: frame.wallMilliseconds, width: frame.width, height: frame.height,
                        jpeg: jpeg, encodeNanoseconds: clock.monotonicNow().nanoseconds(since: start)))
            } catch {
                failed(error)
                return .failed
            }
        }
        return .stopping
    }

    /// Waits, with the camera closed, until a frame or a command is wanted or a job starts.
    private func waitForDemand() {
        shared.isIdle.store(true, ordering: .relaxed)
        defer { shared.isIdle.store(false, ordering: .relaxed) }
        // Polled rather than signalled: 20 ms of extra latency on the first request after idle
        // is nothing beside opening the camera and its warm-up.
        while !shared.isStopping && !shared.hasCommands && !shared.keepAwake.load(ordering: .relaxed)
            && !shared.exchange.wantsFrame()
        {
            SystemClock.sleep(until: clock.monotonicNow().advanced(by: 20_000_000))
        }
    }

    /// Runs queued camera commands, between frames, on this thread.
    private func runCommands() {
        for command in shared.takeCommands() { command(source, nil) }
    }

    private func failed(_ error: any Error) {
        shared.counters.failures.add(1, ordering: .relaxed)
        let reason = "camera \(source.name): \(error)"
        // A repeating failure is logged once until it changes (the ustreamer habit).
        if reason != lastFailure {
            logger.error("camera failed", ["camera": source.name, "error": String(describing: error)])
            lastFailure = reason
        }
        shared.exchange.fail(.cameraUnavailable(reason))
        shared.failPendingCommands(CaptureError.cameraUnavailable(reason))
        publishNoSignal(reason)
    }

    /// Sleeps until the next reopen attempt, refreshing the "no signal" frame once a second
    /// and staying responsive to stop and to commands.
    private func waitBeforeReopening() {
        let deadline = clock.monotonicNow().advanced(by: reopenIntervalNanoseconds)
        while !shared.isStopping && clock.monotonicNow() < deadline {
            shared.failPendingCommands(CaptureError.cameraUnavailable(lastFailure ?? "camera unavailable"))
            if let lastFailure { publishNoSignal(lastFailure) }
            SystemClock.sleep(until: min(deadline, clock.monotonicNow().advanced(by: 100_000_000)))
        }
    }

    /// Draws the "no signal" frame with the time and `reason`: at once for a new reason, else
    /// at most about once a second (its clock advances; live viewers see the daemon is alive).
    private func publishNoSignal(_ reason: String) {
        let drawnAt = clock.monotonicNow()
        if let last = lastNoSignal, last.reason == reason, drawnAt.nanoseconds(since: last.at) < 950_000_000 {
            return
        }
        lastNoSignal = (drawnAt, reason)
        let mode = shared.mode
        let now = clock.wallMillisecondsNow()
        let image = NoSignalPattern.render(
            width: max(64, mode.width), height: max(48, mode.height), wallMilliseconds: now, reason: reason)
        guard let jpeg = try? encoder.encode(image) else { return }
        shared.exchange.publishNoSignal(
            EncodedFrame(
                sequence: 0, capturedAt: clock.monotonicNow(), wallMilliseconds: now, width: image.width,
                height: image.height, jpeg: jpeg))
    }
}
