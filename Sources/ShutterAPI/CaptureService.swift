import ShutterCamera
import ShutterSystem
import Synchronization

/// Counters the capture thread updates and `/status` reads.
public final class CaptureCounters: Sendable {
    // Relaxed atomics: each counter is read alone, for display; no ordering is implied.
    let captured = Atomic<UInt64>(0)
    let encoded = Atomic<UInt64>(0)
    let failures = Atomic<UInt64>(0)

    public var framesCaptured: UInt64 { captured.load(ordering: .relaxed) }
    public var framesEncoded: UInt64 { encoded.load(ordering: .relaxed) }
    public var captureFailures: UInt64 { failures.load(ordering: .relaxed) }
}

/// A snapshot of the camera for `/status` and `/healthz`.
public struct CameraStatus: Sendable {
    public var name: String
    public var mode: CameraMode
    public var framesCaptured: UInt64
    public var framesEncoded: UInt64
    /// Nil while frames flow; otherwise why they do not.
    public var failure: String?
}

/// The one owner of the camera: starts and stops it, runs its capture thread, and
/// hands out frames. Nothing else touches the `CameraSource`.
public actor CaptureService {
    private let box: SourceBox
    private let quality: Int
    private let logger: Logger
    private let exchange = FrameExchange()
    private let stopRequested = StopFlag()
    private var thread: OSThread?
    /// Counters the capture thread updates.
    public nonisolated let counters = CaptureCounters()
    /// The camera's name, fixed at creation.
    public nonisolated let cameraName: String
    // Written before the capture thread starts, read-only after.
    private nonisolated(unsafe) var negotiatedMode: CameraMode

    public init(source: sending any CameraSource, quality: Int, logger: Logger) {
        self.box = SourceBox(source)
        self.quality = quality
        self.logger = logger
        self.cameraName = source.name
        self.negotiatedMode = source.mode
    }

    /// Opens the camera and starts the capture thread.
    public func start() throws {
        guard thread == nil else { return }
        try box.source.start()
        negotiatedMode = box.source.mode
        stopRequested.flag.store(false, ordering: .relaxed)
        let encoder = try JPEGEncoder(quality: quality)
        let context = CaptureLoop(
            box: box, encoder: encoder, exchange: exchange, counters: counters, stopRequested: stopRequested,
            logger: logger)
        thread = try OSThread.spawn(name: "shutter-capture") { context.run() }
        logger.info(
            "camera started",
            [
                "camera": cameraName, "size": "\(negotiatedMode.width)x\(negotiatedMode.height)",
                "fps": String(negotiatedMode.fps),
            ])
    }

    /// Stops the capture thread and closes the camera; waiters get `CaptureError.stopped`.
    public func stop() {
        guard let thread else { return }
        stopRequested.flag.store(true, ordering: .relaxed)
        thread.join()
        self.thread = nil
        box.source.stop()
        exchange.fail(.stopped)
    }

    /// The first frame captured at or after `instant` (a snap never returns a frame older than its request).
    public nonisolated func frame(capturedAtOrAfter instant: MonotonicInstant, timeoutMilliseconds: Int)
        async throws -> EncodedFrame
    {
        try await exchange.frame(capturedAtOrAfter: instant, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The newest encoded frame if it is at most `maxAgeNanoseconds` old at `now`, else the next one.
    public nonisolated func recentFrame(
        maxAgeNanoseconds: UInt64, now: MonotonicInstant, timeoutMilliseconds: Int
    ) async throws -> EncodedFrame {
        if let latest = exchange.latest, now.nanoseconds(since: latest.capturedAt) <= maxAgeNanoseconds {
            return latest
        }
        return try await exchange.frame(capturedAtOrAfter: now, timeoutMilliseconds: timeoutMilliseconds)
    }

    /// The camera's state now.
    public nonisolated var status: CameraStatus {
        CameraStatus(
            name: cameraName, mode: negotiatedMode, framesCaptured: counters.framesCaptured,
            framesEncoded: counters.framesEncoded, failure: exchange.failure.map(Self.describe))
    }

    static func describe(_ error: CaptureError) -> String {
        switch error {
        case .timedOut(let ms): return "the camera delivered no frame within \(ms) ms"
        case .cameraUnavailable(let reason): return reason
        case .stopped: return "capture is stopped"
        }
    }
}

/// The camera, used only by the capture thread once started.
private final class SourceBox: @unchecked Sendable {
    // @unchecked Sendable: the actor hands the source to the capture thread in
    // `start` and touches it again only after joining that thread in `stop`.
    let source: any CameraSource
    init(_ source: any CameraSource) { self.source = source }
}

/// Set by the actor to ask the capture thread to finish after its current frame.
private final class StopFlag: Sendable {
    let flag = Atomic<Bool>(false)
    var isSet: Bool { flag.load(ordering: .relaxed) }
}

/// The capture thread's loop: read a frame, encode it if anyone waits, publish it.
private final class CaptureLoop: @unchecked Sendable {
    // @unchecked Sendable: created by the actor, then used only by the capture thread.
    let box: SourceBox
    let encoder: JPEGEncoder
    let exchange: FrameExchange
    let counters: CaptureCounters
    let stopRequested: StopFlag
    let logger: Logger
    let clock = SystemClock()

    init(
        box: SourceBox, encoder: JPEGEncoder, exchange: FrameExchange, counters: CaptureCounters,
        stopRequested: StopFlag, logger: Logger
    ) {
        self.box = box
        self.encoder = encoder
        self.exchange = exchange
        self.counters = counters
        self.stopRequested = stopRequested
        self.logger = logger
    }

    func run() {
        var lastFailure: String?
        while !stopRequested.isSet {
            do {
                let frame = try box.source.nextFrame()
                counters.captured.add(1, ordering: .relaxed)
                if lastFailure != nil {
                    logger.notice("camera recovered", ["camera": box.source.name])
                    lastFailure = nil
                    exchange.clearFailure()
                }
                guard exchange.wantsFrame() else { continue }
                let jpeg: [UInt8]
                let encodeStart = clock.monotonicNow()
                switch frame.image {
                case .jpeg(let bytes): jpeg = bytes
                case .yuv(let image): jpeg = try encoder.encode(image)
                }
                let encodeNanoseconds = clock.monotonicNow().nanoseconds(since: encodeStart)
                counters.encoded.add(1, ordering: .relaxed)
                exchange.publish(
                    EncodedFrame(
                        sequence: frame.sequence, capturedAt: frame.capturedAt,
                        wallMilliseconds: frame.wallMilliseconds, width: frame.width, height: frame.height,
                        jpeg: jpeg, encodeNanoseconds: encodeNanoseconds))
            } catch {
                counters.failures.add(1, ordering: .relaxed)
                let reason = "camera \(box.source.name) failed: \(error)"
                // A repeating failure is logged once until it changes (the ustreamer habit).
                if reason != lastFailure {
                    logger.error(
                        "capture failed", ["camera": box.source.name, "error": String(describing: error)])
                    lastFailure = reason
                }
                exchange.fail(.cameraUnavailable(reason))
                SystemClock.sleep(until: SystemClock().monotonicNow().advanced(by: 1_000_000_000))
            }
        }
    }
}
