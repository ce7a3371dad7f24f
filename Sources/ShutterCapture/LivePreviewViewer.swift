import ShutterSystem
import Synchronization

/// One live viewer: its slot for the newest part, its frame-rate cap and its counters.
///
/// Lives on the preview's queue thread, like the connection that sends its parts: the transport
/// takes the part when its socket has room, and is told (`onPart`) when a part arrives.
public final class LivePreviewViewer<Part: LivePreviewPart>: @unchecked Sendable {
    // @unchecked Sendable: made by a handler and then used only on the queue's thread;
    // `statistics` is what other threads read.

    /// Counters `/status` reads from any thread.
    public let statistics: PreviewViewerStatistics
    /// The rendition width (0: the camera's own size).
    var key: Int
    /// Between `LivePreview.add` and `remove`.
    var isWatching = false
    /// Called when a part lands in the slot; the transport wakes its connection.
    public var onPart: (() -> Void)?
    private var limiter: FrameRateLimiter
    /// The newest part not yet taken: the viewer's one slot.
    private var pending: Part?
    private var newestOffered: MonotonicInstant?

    init(key: Int, framesPerSecond: Double?, statistics: PreviewViewerStatistics) {
        self.key = key
        self.statistics = statistics
        limiter = FrameRateLimiter(framesPerSecond: framesPerSecond)
    }

    /// Puts `part` in the slot (replacing an untaken one) unless the fps cap says no, or it is
    /// no newer than a part already offered (a scaler replaced after its size was left and
    /// joined again may still finish an older frame).
    func offer(_ part: Part) {
        guard isWatching else { return }
        if let newest = newestOffered, part.capturedAt <= newest { return }
        guard limiter.admit(part.capturedAt) else { return }
        newestOffered = part.capturedAt
        if pending != nil { statistics.countSkipped() }
        pending = part
        onPart?()
    }

    /// The part in the slot, if any, counted as sent; the slot is empty afterwards.
    public func take() -> Part? {
        guard let part = pending else { return nil }
        pending = nil
        statistics.countSent()
        return part
    }

    /// Empties the slot (the viewer is leaving).
    public func clear() {
        pending = nil
        onPart = nil
    }
}

/// A viewer's counters, read by `/status` on any thread.
public final class PreviewViewerStatistics: Sendable {
    public let id: UInt64
    /// The rendition's width, or nil for the camera's own size.
    public var width: Int? {
        let width = renditionWidth.load(ordering: .relaxed)
        return width == 0 ? nil : width
    }
    public let maximumFramesPerSecond: Double?
    public let connectedAt: MonotonicInstant
    private let sent = Atomic<UInt64>(0)
    private let skipped = Atomic<UInt64>(0)
    /// 0 for the camera's own size; changes once at most, when no scaler could be started.
    private let renditionWidth: Atomic<Int>

    init(id: UInt64, width: Int?, maximumFramesPerSecond: Double?, connectedAt: MonotonicInstant) {
        self.id = id
        self.renditionWidth = Atomic(width ?? 0)
        self.maximumFramesPerSecond = maximumFramesPerSecond
        self.connectedAt = connectedAt
    }

    /// Parts taken by the viewer's transport.
    public var framesSent: UInt64 { sent.load(ordering: .relaxed) }
    /// Frames replaced by a newer one before the viewer took them.
    public var framesSkipped: UInt64 { skipped.load(ordering: .relaxed) }

    func countSent() { sent.add(1, ordering: .relaxed) }
    /// The viewer gets the camera's own size after all.
    func fellBackToCameraSize() { renditionWidth.store(0, ordering: .relaxed) }
    func countSkipped() { skipped.add(1, ordering: .relaxed) }
}
