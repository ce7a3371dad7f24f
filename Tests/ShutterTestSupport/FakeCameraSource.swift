import ShutterCamera
import ShutterSystem

/// A `CameraSource` that plays back scripted frames and errors at once, or paces generated
/// frames on an injected clock, and counts how it was driven.
///
/// All state sits behind one lock, so a test can read the counters while a capture thread
/// drives the source.
public final class FakeCameraSource: CameraSource, Sendable {
    /// One scripted answer to `nextFrame`.
    public enum Step: Sendable {
        /// Return this frame.
        case frame(RawFrame)
        /// Throw this error.
        case failure(any Error)
    }

    /// What `nextFrame` does once the script is used up.
    public enum WhenExhausted: Sendable {
        /// Throw this error every time.
        case fail(any Error)
        /// Make frames with `FakeCameraSource.frame(sequence:width:height:)` in `mode`'s size,
        /// numbered on from the last frame returned.
        case generate
        /// Like `generate`, but paced on the source's clock: frame k after `start` is due k frame
        /// intervals (`mode.fps`) after it and stamped with that instant, and `nextFrame` waits
        /// for it on the clock. On a `ManualClock`, advancing by n intervals releases n frames.
        case paced
    }

    /// The name given at init, `"fake"` by default.
    public let name: String
    /// The mode given at init.
    public let mode: CameraMode

    /// What `nextFrame` does once the script is used up (fixed at init).
    private let whenExhausted: WhenExhausted
    /// What paced frames wait on and are stamped with.
    private let clock: any Clock
    /// Ends a paced wait early (`interruptWait`).
    private let pacingWakeup = ThreadWakeup()

    private struct State {
        var script: [Step]
        var startFailures: [any Error]
        var whenExhausted: WhenExhausted
        var lastSequence: UInt64 = 0
        var isRunning = false
        var hasStopped = false
        var startCount = 0
        var stopCount = 0
        var nextFrameCount = 0
        var unpluggedBy: (any Error)?
        /// When the last paced frame was due (the start, before the first).
        var lastDue = MonotonicInstant(nanoseconds: 0)
        /// The planes of the last uncompressed frame delivered, kept as a real source keeps its
        /// canvas, while `lendsFrameBuffers` and not lent.
        var heldImage: YUVImage?
        var lentCount = 0
        var deliveredBufferAddresses: [UInt] = []
        var returnedBuffers: [ReturnedBuffer] = []
    }

    /// A buffer given back through `returnFrameBuffer`: where its planes were, and a copy of them.
    public struct ReturnedBuffer: Sendable, Equatable {
        /// The address of the planes, to tell the buffer lent from a copy of it.
        public var address: UInt
        /// The planes as they came back.
        public var bytes: [UInt8]
    }

    /// How many delivered addresses and returned buffers are remembered (the newest).
    public static let bufferRecordLimit = 16

    /// Whether the source holds on to each uncompressed frame's planes, as the V4L2 decoder
    /// holds its canvas, and lends them when asked (`FrameBufferLending`).
    public let lendsFrameBuffers: Bool

    // Every method and counter takes this lock; nothing in it blocks.
    private let state: LockedValue<State>

    /// A source that answers `nextFrame` from `script`, then as `whenExhausted` says; each `start`
    /// throws the next of `startFailures` until they run out. Paced frames follow `clock`. With
    /// `lendsFrameBuffers`, it keeps each uncompressed frame's planes until they are lent.
    public init(
        name: String = "fake", mode: CameraMode = CameraMode(width: 64, height: 48, fps: 30),
        script: [Step] = [],
        whenExhausted: WhenExhausted = .fail(CameraError.stopped), startFailures: [any Error] = [],
        clock: any Clock = SystemClock(), lendsFrameBuffers: Bool = false
    ) {
        self.lendsFrameBuffers = lendsFrameBuffers
        self.name = name
        self.mode = mode
        self.whenExhausted = whenExhausted
        self.clock = clock
        self.state = LockedValue(
            State(script: script, startFailures: startFailures, whenExhausted: whenExhausted))
    }

    /// Appends steps to the script.
    public func enqueue(_ steps: [Step]) {
        state.withLock { $0.script.append(contentsOf: steps) }
    }

    /// Makes `start` and `nextFrame` throw `error` until `plugBackIn()`, like a camera pulled out.
    public func unplug(throwing error: any Error) {
        state.withLock { $0.unpluggedBy = error }
    }

    /// Ends `unplug`: the camera opens and delivers again.
    public func plugBackIn() {
        state.withLock { $0.unpluggedBy = nil }
    }

    /// Calls to `start`, including ones that threw.
    public var startCount: Int { state.withLock { $0.startCount } }
    /// Calls to `stop`.
    public var stopCount: Int { state.withLock { $0.stopCount } }
    /// Calls to `nextFrame`, including ones that threw.
    public var nextFrameCount: Int { state.withLock { $0.nextFrameCount } }
    /// Whether `start` succeeded and `stop` has not been called since.
    public var isRunning: Bool { state.withLock { $0.isRunning } }
    /// Scripted steps not yet played.
    public var remainingSteps: Int { state.withLock { $0.script.count } }

    /// Counts the call, then throws the next scripted start failure or starts.
    public func start() throws {
        try state.withLock { state in
            state.startCount += 1
            if let error = state.unpluggedBy { throw error }
            if !state.startFailures.isEmpty { throw state.startFailures.removeFirst() }
            state.isRunning = true
            state.hasStopped = false
            state.lastDue = clock.monotonicNow()
        }
    }

    /// Counts the call and stops; `nextFrame` then throws `CameraError.stopped`.
    public func stop() {
        state.withLock { state in
            state.stopCount += 1
            state.isRunning = false
            state.hasStopped = true
        }
    }

    /// Makes a paced wait end at once (its frame is delivered early).
    public func interruptWait() {
        pacingWakeup.signal()
    }

    /// Times `lendFrameBuffer` gave up the planes it held.
    public var lentCount: Int { state.withLock { $0.lentCount } }
    /// Where the planes of the scripted uncompressed frames delivered were, oldest first.
    public var deliveredBufferAddresses: [UInt] { state.withLock { $0.deliveredBufferAddresses } }
    /// The buffers given back, oldest first.
    public var returnedBuffers: [ReturnedBuffer] { state.withLock { $0.returnedBuffers } }

    /// The address of `image`'s planes.
    public static func address(of image: YUVImage) -> UInt {
        image.bytes.withUnsafeBufferPointer { UInt(bitPattern: $0.baseAddress) }
    }

    /// The frame interval of `mode`.
    public var frameInterval: UInt64 { 1_000_000_000 / UInt64(max(1, mode.fps)) }

    /// Plays the next step, with the same `notStarted`/`stopped` errors as a real source.
    public func nextFrame() throws -> RawFrame {
        let size = (mode.width, mode.height)
        var due: MonotonicInstant?
        if case .paced = whenExhausted {
            due = state.withLock {
                $0.script.isEmpty && $0.isRunning ? $0.lastDue.advanced(by: frameInterval) : nil
            }
            // Waits outside the lock, so counters stay readable meanwhile.
            if let due { _ = clock.wait(for: pacingWakeup, until: due) }
        }
        return try state.withLock { state in
            state.nextFrameCount += 1
            if let error = state.unpluggedBy { throw error }
            guard state.isRunning else {
                throw state.hasStopped ? CameraError.stopped : CameraError.notStarted
            }
            if !state.script.isEmpty {
                switch state.script.removeFirst() {
                case .frame(let frame):
                    state.lastSequence = frame.sequence
                    if lendsFrameBuffers, case .yuv(let image) = frame.image {
                        state.heldImage = image
                        state.deliveredBufferAddresses.append(Self.address(of: image))
                        state.deliveredBufferAddresses = Array(
                            state.deliveredBufferAddresses.suffix(Self.bufferRecordLimit))
                    }
                    return frame
                case .failure(let error):
                    throw error
                }
            }
            switch state.whenExhausted {
            case .fail(let error):
                throw error
            case .generate:
                state.lastSequence += 1
                return Self.frame(sequence: state.lastSequence, width: size.0, height: size.1)
            case .paced:
                state.lastSequence += 1
                let capturedAt = due ?? clock.monotonicNow()
                state.lastDue = capturedAt
                var frame = Self.frame(
                    sequence: state.lastSequence, width: size.0, height: size.1,
                    wallMilliseconds: clock.wallMillisecondsNow())
                frame.capturedAt = capturedAt
                return frame
            }
        }
    }

    /// A frame holding a real, decodable JPEG: a flat grey whose level follows `sequence`, so
    /// successive frames differ and the same sequence always gives the same bytes. Both clocks
    /// read `sequence` thirtieths of a second after a fixed origin unless `wallMilliseconds` is given.
    public static func frame(
        sequence: UInt64, width: Int = 64, height: Int = 48, wallMilliseconds: Int64? = nil
    ) -> RawFrame {
        let level = UInt8(16 + sequence % 200)
        var image = YUVImage(width: width, height: height, subsampling: .yuv420)
        image.fill(
            x: 0, y: 0, width: width, height: height, luma: level, cb: YUVImage.neutralChroma,
            cr: YUVImage.neutralChroma)
        let jpeg = try! JPEGEncoder(quality: 80).encode(image)
        return RawFrame(
            sequence: sequence, capturedAt: MonotonicInstant(nanoseconds: sequence * 1_000_000_000 / 30),
            wallMilliseconds: wallMilliseconds ?? 1_795_000_000_000 + Int64(sequence) * 1000 / 30,
            image: .jpeg(jpeg), width: width, height: height)
    }

    /// `count` scripted frames numbered from `firstSequence`.
    public static func frames(_ count: Int, from firstSequence: UInt64 = 1, width: Int = 64, height: Int = 48)
        -> [Step]
    {
        (0..<UInt64(count)).map { .frame(frame(sequence: firstSequence + $0, width: width, height: height)) }
    }
}

extension FakeCameraSource: FrameBufferLending {
    /// Drops the planes held since the last frame, when it lends and holds any.
    public func lendFrameBuffer() -> Bool {
        state.withLock { state in
            guard state.heldImage != nil else { return false }
            state.heldImage = nil
            state.lentCount += 1
            return true
        }
    }

    /// Records where the buffer's planes are and what they hold, then drops it.
    public func returnFrameBuffer(_ image: consuming YUVImage) {
        let returned = ReturnedBuffer(
            address: Self.address(of: image), bytes: image.bytes.withUnsafeBufferPointer { Array($0) })
        state.withLock {
            $0.returnedBuffers.append(returned)
            $0.returnedBuffers = Array($0.returnedBuffers.suffix(Self.bufferRecordLimit))
        }
    }
}
