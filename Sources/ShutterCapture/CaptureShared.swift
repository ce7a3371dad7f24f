import ShutterCamera
import ShutterSystem
import Synchronization

/// What the actor, request tasks and the capture thread share; every field is locked or atomic.
final class CaptureShared: Sendable {
    typealias Command = @Sendable (any CameraSource, (any Error)?) -> Void

    /// Rung whenever the capture thread should look again: a frame or a command is wanted, a job
    /// keeps the camera awake, or capture is stopping.
    let wakeup = ThreadWakeup()
    let exchange: FrameExchange
    let counters = CaptureCounters()
    let phase = PhaseSignal()
    let stopRequested = Atomic<Bool>(false)
    /// Set by the job service while any job is active.
    let keepAwake = Atomic<Bool>(false)
    /// Set when a request was answered with a frame already in hand (no wait, so no waiter for
    /// `wantsFrame` to see): the open camera takes it as demand once, so a client polling
    /// `/preview.jpg` or snapping with `max_age_ms` keeps it from idling, as a waiting one does.
    let answeredFromHand = Atomic<Bool>(false)
    // Guards the negotiated mode (written by the capture thread after each open) and the
    // command queue (filled by request tasks, drained by the capture thread between frames).
    private let state:
        LockedValue<
            (name: String, driver: String, mode: CameraMode, pixelFormat: String, commands: [Command])
        >

    init(name: String, driver: String, mode: CameraMode, pixelFormat: String, clock: any Clock) {
        state = LockedValue((name, driver, mode, pixelFormat, []))
        exchange = FrameExchange(clock: clock, demand: wakeup)
    }

    var name: String {
        get { state.withLock { $0.name } }
        set { state.withLock { $0.name = newValue } }
    }

    /// The camera's driver, for the pictures' EXIF `Make`.
    var driver: String {
        get { state.withLock { $0.driver } }
        set { state.withLock { $0.driver = newValue } }
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

    /// Whether a frame, a command or an awake camera is wanted now.
    var hasDemand: Bool {
        hasCommands || keepAwake.load(ordering: .relaxed) || exchange.wantsFrame()
    }

    func enqueue(_ command: @escaping Command) {
        state.withLock { $0.commands.append(command) }
        wakeup.signal()
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

/// The capture thread's phase, and the tasks waiting for one.
final class PhaseSignal: Sendable {
    private let state = LockedValue<
        (phase: CapturePhase, waiters: [(CapturePhase, CheckedContinuation<Void, Never>)])
    >(
        (.opening, []))

    var current: CapturePhase { state.withLock { $0.phase } }
    /// Every phase entered, on the capture thread.
    let changes = Broadcast<CapturePhase>()

    /// Called by the capture thread as it moves on.
    func enter(_ phase: CapturePhase) {
        var changed = false
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard state.phase != phase else { return [] }
            changed = true
            state.phase = phase
            let ready = state.waiters.filter { $0.0 == phase }.map(\.1)
            state.waiters.removeAll { $0.0 == phase }
            return ready
        }
        for waiter in ready { waiter.resume() }
        if changed { changes.publish(phase) }
    }

    /// Returns once the thread is in `phase`: at once if it is now, else when it next enters it
    /// (a phase entered and left before the call is not seen).
    func reached(_ phase: CapturePhase) async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state -> Bool in
                if state.phase == phase { return true }
                state.waiters.append((phase, continuation))
                return false
            }
            if now { continuation.resume() }
        }
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
