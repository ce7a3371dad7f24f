import ShutterCamera
import ShutterCapture
import ShutterJobRunner
import ShutterSystem

/// A `JobCamera` that answers at once: each frame is captured at the instant asked for (or now,
/// if that has passed), until the test makes it fail. Given a gate, each frame request passes it
/// first, so a test can hold a shot in flight.
public final class FakeJobCamera: JobCamera {
    private struct State {
        var failure: CaptureError?
        var sequence: UInt64 = 0
        var keptAwake = false
    }

    // Every member takes this lock; nothing in it blocks.
    private let state = LockedValue(State())
    private let clock: any Clock
    private let frameGate: HandlerGate?
    public let cameraName: String

    /// A camera named `name` whose frames are stamped on `clock`; each frame request waits at
    /// `frameGate`, if given, until the test opens it.
    public init(clock: any Clock, name: String = "fake", frameGate: HandlerGate? = nil) {
        self.clock = clock
        self.cameraName = name
        self.frameGate = frameGate
    }

    /// Makes every frame request throw `error` until `recover()`.
    public func fail(with error: CaptureError) {
        state.withLock { $0.failure = error }
    }

    /// Ends `fail(with:)`.
    public func recover() {
        state.withLock { $0.failure = nil }
    }

    /// The frame's JPEG with the EXIF block the real camera writes, made by `Shutter`.
    public func storedPicture(of frame: EncodedFrame, label: String?, jobID: Int64?) -> [UInt8] {
        frame.storedPicture(label: label, make: "Shutter", model: cameraName, software: "shutterd test")
    }

    /// Frames handed out so far.
    public var framesServed: UInt64 { state.withLock { $0.sequence } }
    /// What the last `keepAwake` asked for.
    public var isKeptAwake: Bool { state.withLock { $0.keptAwake } }

    public func frame(capturedAtOrAfter instant: MonotonicInstant, timeoutMilliseconds: Int) async throws
        -> EncodedFrame
    {
        await frameGate?.pass()
        let now = clock.monotonicNow()
        let sequence = try state.withLock { state -> UInt64 in
            if let failure = state.failure { throw failure }
            state.sequence += 1
            return state.sequence
        }
        let frame = FakeCameraSource.frame(sequence: sequence, wallMilliseconds: clock.wallMillisecondsNow())
        guard case .jpeg(let jpeg) = frame.image else { preconditionFailure("fake frames are JPEG") }
        return EncodedFrame(
            sequence: sequence, capturedAt: max(instant, now), wallMilliseconds: frame.wallMilliseconds,
            width: frame.width, height: frame.height, jpeg: jpeg)
    }

    public func keepAwake(_ awake: Bool) {
        state.withLock { $0.keptAwake = awake }
    }
}
