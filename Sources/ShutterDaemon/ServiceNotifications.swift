import ShutterCapture
import ShutterSystem

/// What systemd is told and when (pure: snapshots in, messages out), so readiness, the status
/// line and the watchdog's rule are tested without a socket or a clock.
///
/// - `READY=1` once the camera has delivered its first frame or been reported missing (the
///   catalog is open and the listeners bound before this runs at all).
/// - `STATUS=…` whenever the sentence changes: "streaming 1280x720 at 30 fps, 2 viewers",
///   "camera gone, reopening: …".
/// - `WATCHDOG=1` every interval, but only while the capture thread makes progress (frames
///   arrive, or it is waiting as it should: idle, or between reopen attempts). It is sent from
///   the event loop's tick, so a wedged event loop sends nothing either, and systemd restarts
///   a daemon whose loop or capture thread has stopped.
struct ServiceNotifications {
    /// What the decisions read: the camera's state and the preview's audience.
    struct Snapshot: Equatable {
        var phase: CapturePhase
        var framesCaptured: UInt64
        var width: Int
        var height: Int
        var fps: Int
        var viewers: Int
        /// Why the camera is gone, when it is.
        var failure: String?
    }

    let watchdogIntervalNanoseconds: UInt64?
    private(set) var isReady = false
    private var lastStatus: String?
    private var lastWatchdogCheck: (at: MonotonicInstant, frames: UInt64)?
    /// Set while the watchdog is withheld, so the warning is logged once per episode.
    private(set) var isWithholdingWatchdog = false

    init(watchdogIntervalNanoseconds: UInt64?) {
        self.watchdogIntervalNanoseconds = watchdogIntervalNanoseconds
    }

    /// The messages to send for `snapshot` at `now` (empty when nothing changed).
    mutating func messages(for snapshot: Snapshot, now: MonotonicInstant) -> [String] {
        var messages: [String] = []
        let status = Self.status(snapshot)
        var assignments: [String] = []
        if !isReady && Self.hasSettled(snapshot) {
            isReady = true
            assignments.append("READY=1")
        }
        if status != lastStatus {
            lastStatus = status
            assignments.append("STATUS=\(status)")
        }
        if !assignments.isEmpty { messages.append(assignments.joined(separator: "\n")) }
        if let watchdog = watchdogDecision(snapshot, now: now) { messages.append(watchdog) }
        return messages
    }

    /// Whether the camera has either delivered a frame or been found missing.
    static func hasSettled(_ snapshot: Snapshot) -> Bool {
        switch snapshot.phase {
        case .streaming: snapshot.framesCaptured > 0
        case .failed, .idle: true
        case .opening, .stopped: false
        }
    }

    /// The one-line status systemd shows in `systemctl status`.
    static func status(_ snapshot: Snapshot) -> String {
        let viewers = snapshot.viewers == 1 ? "1 viewer" : "\(snapshot.viewers) viewers"
        switch snapshot.phase {
        case .opening: return "opening the camera"
        case .streaming:
            return "streaming \(snapshot.width)x\(snapshot.height) at \(snapshot.fps) fps, \(viewers)"
        case .failed: return "camera gone, reopening" + (snapshot.failure.map { ": \($0.prefix(200))" } ?? "")
        case .idle: return "camera idle until wanted, \(viewers)"
        case .stopped: return "stopping"
        }
    }

    /// `WATCHDOG=1` once an interval has passed since the last check, if the capture thread
    /// made progress since then; nil otherwise.
    private mutating func watchdogDecision(_ snapshot: Snapshot, now: MonotonicInstant) -> String? {
        guard let interval = watchdogIntervalNanoseconds else { return nil }
        if let last = lastWatchdogCheck, now.nanoseconds(since: last.at) < interval { return nil }
        let progressed: Bool
        switch snapshot.phase {
        // Waiting as designed: for demand, or for the next reopen attempt (both wake on a clock
        // or a signal; neither can hang).
        case .idle, .failed, .stopped: progressed = true
        // Reading (or opening) must show frames; one check's grace covers the first open.
        case .streaming, .opening:
            progressed = lastWatchdogCheck.map { snapshot.framesCaptured > $0.frames } ?? true
        }
        lastWatchdogCheck = (now, snapshot.framesCaptured)
        isWithholdingWatchdog = !progressed
        return progressed ? "WATCHDOG=1" : nil
    }
}
