import ShutterCamera
import ShutterSystem
import Synchronization

/// A camera whose first `stop()` blocks until the test releases it, so a test can act while
/// `CaptureService.stop()` waits for the capture thread. Its frames never come: `nextFrame`
/// waits until interrupted, then throws `CameraError.stopped`.
public final class HeldStopCameraSource: CameraSource, @unchecked Sendable {
    // @unchecked Sendable: the wake-ups and atomics are thread-safe; nothing else is mutable.
    public let name = "held"
    public let mode = CameraMode(width: 64, height: 48, fps: 30)
    /// Signalled when the first `stop()` begins.
    public let stopEntered = ThreadWakeup()
    /// Signal to let the first `stop()` return.
    public let releaseStop = ThreadWakeup()
    private let interrupted = ThreadWakeup()
    private let startCalls = Atomic<Int>(0)
    private let stopCalls = Atomic<Int>(0)

    public init() {}

    /// Calls to `start`.
    public var startCount: Int { startCalls.load(ordering: .relaxed) }
    /// Calls to `stop`.
    public var stopCount: Int { stopCalls.load(ordering: .relaxed) }

    public func start() throws { startCalls.add(1, ordering: .relaxed) }

    public func stop() {
        if stopCalls.add(1, ordering: .relaxed).newValue == 1 {
            stopEntered.signal()
            _ = releaseStop.wait(untilMonotonic: nil)
        }
    }

    public func nextFrame() throws -> RawFrame {
        _ = interrupted.wait(untilMonotonic: nil)
        throw CameraError.stopped
    }

    public func interruptWait() { interrupted.signal() }
}
