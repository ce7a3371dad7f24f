import ShutterCamera
import ShutterSystem

/// What every live viewer of one size receives for a frame: made once per frame and size (the
/// transport's framing around the JPEG, say) and shared by all of them.
public protocol LivePreviewPart: AnyObject, Sendable {
    /// The part for `frame`.
    init(_ frame: EncodedFrame)
    /// When the camera captured the frame (what the fps cap and the "never older" rule read).
    var capturedAt: MonotonicInstant { get }
}

/// Fans camera frames out to every live viewer: which frame reaches whom, and when.
///
/// Each frame becomes a `Part` once per size, and every viewer of that size gets the same part
/// (the JPEG array is shared, never copied). Each viewer keeps one slot for the newest part: a
/// viewer that has not taken its part when the next arrives skips to the newer one, so a slow
/// viewer never delays the others and never holds more than the part it is sending plus one.
///
/// Threads: viewers live on `queue`'s thread (the event loop). Frames arrive on the capture
/// thread, which hands each frame to the queue once for all viewers of the camera's size, and
/// to one scaler thread per smaller size, which hands its rendition to the queue once for all
/// viewers of that size. Each size has a one-frame hand-off slot: while a hand-off is queued, a
/// newer frame replaces the one waiting, so a busy queue skips to the newest frame instead of
/// working through a backlog.
public final class LivePreview<Part: LivePreviewPart>: @unchecked Sendable {
    // @unchecked Sendable: `viewers` is touched only on `queue`'s thread; everything the
    // capture thread and the scalers read is behind `shared`.

    private let capture: CaptureService
    private let quality: Int
    private let queue: any SerialQueue
    private let clock: any Clock
    private let logger: Logger

    private struct Shared {
        var hasNativeViewers = false
        /// The scaler of each smaller width, fed the newest frame only.
        var scalers: [Int: RenditionScaler] = [:]
        var statistics: [UInt64: PreviewViewerStatistics] = [:]
        var nextViewerID: UInt64 = 1
        /// The newest frame of each size not yet handed to its viewers: at most one hand-off
        /// per size is ever queued.
        var awaitingDelivery: [Int: EncodedFrame] = [:]
        /// Counters of viewers that have left, so totals never go down.
        var departedSent: UInt64 = 0
        var departedSkipped: UInt64 = 0
    }
    private let shared = LockedValue(Shared())

    /// Viewers by rendition width (0: the camera's own size). Queue thread only.
    private var viewers: [Int: [LivePreviewViewer<Part>]] = [:]

    /// A fan-out of `capture`'s frames to viewers living on `queue`; smaller sizes are encoded
    /// at `quality`.
    public init(
        capture: CaptureService, quality: Int, queue: any SerialQueue, clock: any Clock = SystemClock(),
        logger: Logger
    ) {
        self.capture = capture
        self.quality = quality
        self.queue = queue
        self.clock = clock
        self.logger = logger
        capture.setFrameObserver { [weak self] frame in self?.frameArrived(frame) }
    }

    // Scaler threads end with their last viewer; these end with the preview (the daemon stopping).
    deinit {
        for scaler in shared.withLock({ Array($0.scalers.values) }) { scaler.finish() }
    }

    /// A new viewer, not yet watching: it joins with `add`.
    ///
    /// `width` asks for a smaller picture: at least that wide, made by TurboJPEG's scaled decode
    /// (n/8), so all widths map onto at most seven renditions.
    public func makeViewer(framesPerSecond: Double?, width: Int?) -> LivePreviewViewer<Part> {
        let mode = capture.status.mode
        var key = 0
        if let width {
            let scaled = JPEGDecoder.scaledSize(width: mode.width, height: mode.height, minimumWidth: width)
            if scaled.width < mode.width { key = scaled.width }
        }
        let id = shared.withLock { state -> UInt64 in
            defer { state.nextViewerID += 1 }
            return state.nextViewerID
        }
        let statistics = PreviewViewerStatistics(
            id: id, width: key == 0 ? nil : key, maximumFramesPerSecond: framesPerSecond,
            connectedAt: clock.monotonicNow())
        return LivePreviewViewer(key: key, framesPerSecond: framesPerSecond, statistics: statistics)
    }

    /// Each smaller size being made now, with the frames encoded at that size (once per frame
    /// for all of its viewers).
    public var renditions: [(width: Int, framesEncoded: UInt64)] {
        shared.withLock { state in
            state.scalers.values.map { ($0.width, $0.framesEncoded) }.sorted { $0.width < $1.width }
        }
    }

    /// Every viewer's counters, and the totals including viewers that have left.
    public var statistics: (viewers: [PreviewViewerStatistics], framesSent: UInt64, framesSkipped: UInt64) {
        shared.withLock { state in
            let viewers = state.statistics.values.sorted { $0.id < $1.id }
            return (
                viewers,
                viewers.reduce(state.departedSent) { $0 + $1.framesSent },
                viewers.reduce(state.departedSkipped) { $0 + $1.framesSkipped }
            )
        }
    }

    // MARK: Queue thread

    /// Starts sending frames to `viewer` (call on the queue's thread).
    public func add(_ viewer: LivePreviewViewer<Part>) {
        assert(queue.isCurrent)
        let wasWatched = !viewers.isEmpty
        var scaler: RenditionScaler?
        if viewer.key != 0 {
            scaler = self.scaler(width: viewer.key)
            // Without a scaler thread (the system refused one), the camera's own size is better
            // than no picture at all.
            if scaler == nil {
                viewer.key = 0
                viewer.statistics.fellBackToCameraSize()
            }
        }
        viewer.isWatching = true
        viewers[viewer.key, default: []].append(viewer)
        shared.withLock { state in
            state.statistics[viewer.statistics.id] = viewer.statistics
            if viewer.key == 0 { state.hasNativeViewers = true }
        }
        if !wasWatched { capture.setLiveDemand(true) }
        logger.info(
            "preview viewer joined",
            [
                "viewer": String(viewer.statistics.id),
                "width": viewer.statistics.width.map(String.init) ?? "camera",
                "max_fps": viewer.statistics.maximumFramesPerSecond.map { String($0) } ?? "camera",
                "viewers": String(viewerCount),
            ])
        // While the camera is gone, show the newest "no signal" picture at once.
        if let noSignal = capture.currentNoSignalFrame {
            if let scaler {
                scaler.offer(noSignal)
            } else {
                viewer.offer(Part(noSignal))
            }
        }
    }

    /// Stops sending frames to `viewer` (call on the queue's thread); its counters join the totals.
    public func remove(_ viewer: LivePreviewViewer<Part>) {
        assert(queue.isCurrent)
        guard viewer.isWatching else { return }
        viewer.isWatching = false
        viewers[viewer.key]?.removeAll { $0 === viewer }
        let sizeUnwatched = viewers[viewer.key]?.isEmpty ?? true
        if sizeUnwatched { viewers[viewer.key] = nil }
        let scaler = shared.withLock { state -> RenditionScaler? in
            if state.statistics.removeValue(forKey: viewer.statistics.id) != nil {
                state.departedSent += viewer.statistics.framesSent
                state.departedSkipped += viewer.statistics.framesSkipped
            }
            guard sizeUnwatched else { return nil }
            if viewer.key == 0 {
                state.hasNativeViewers = false
                return nil
            }
            return state.scalers.removeValue(forKey: viewer.key)
        }
        scaler?.finish()
        if viewers.isEmpty { capture.setLiveDemand(false) }
        let milliseconds = clock.monotonicNow().nanoseconds(since: viewer.statistics.connectedAt) / 1_000_000
        logger.info(
            "preview viewer left",
            [
                "viewer": String(viewer.statistics.id), "frames_sent": String(viewer.statistics.framesSent),
                "frames_skipped": String(viewer.statistics.framesSkipped),
                "seconds": Timestamp.thousandths(milliseconds),
                "viewers": String(viewerCount),
            ])
    }

    private var viewerCount: Int { viewers.values.reduce(0) { $0 + $1.count } }

    /// The scaler of `width`, started for its first viewer; nil if no thread could be started.
    private func scaler(width: Int) -> RenditionScaler? {
        if let existing = shared.withLock({ $0.scalers[width] }) { return existing }
        do {
            let scaler = try RenditionScaler(width: width, quality: quality, logger: logger) {
                [weak self] frame in self?.handOff(frame, key: width)
            }
            shared.withLock { $0.scalers[width] = scaler }
            return scaler
        } catch {
            logger.error(
                "live preview: cannot start a scaler; sending the camera's size",
                ["width": String(width), "error": String(describing: error)])
            return nil
        }
    }

    /// Turns the newest frame of size `key` into a part once and offers it to every viewer of it.
    private func deliverNewest(key: Int) {
        guard let frame = shared.withLock({ $0.awaitingDelivery.removeValue(forKey: key) }) else { return }
        guard let group = viewers[key], !group.isEmpty else { return }
        let part = Part(frame)
        for viewer in group { viewer.offer(part) }
    }

    // MARK: Capture thread and scalers

    /// Called on the capture thread for every frame while anyone watches.
    func frameArrived(_ frame: EncodedFrame) {
        let (native, scalers) = shared.withLock { ($0.hasNativeViewers, Array($0.scalers.values)) }
        if native { handOff(frame, key: 0) }
        for scaler in scalers { scaler.offer(frame) }
    }

    /// Makes `frame` the newest of size `key` and, unless a hand-off is already queued (which
    /// will take this frame instead of the one it was queued for), queues one.
    private func handOff(_ frame: EncodedFrame, key: Int) {
        let queued = shared.withLock { state -> Bool in
            defer { state.awaitingDelivery[key] = frame }
            return state.awaitingDelivery[key] != nil
        }
        if !queued { queue.execute { self.deliverNewest(key: key) } }
    }
}
