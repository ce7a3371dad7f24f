import ShutterCamera
import ShutterHTTP
import ShutterSystem
import Synchronization

/// Fans camera frames out to every `/preview.mjpg` viewer.
///
/// Each frame becomes a multipart part once per size, and every viewer of that size writes
/// the same bytes (the JPEG array is shared, never copied). Each viewer keeps one slot for the
/// newest part: a viewer whose socket is full skips frames and gets the newest next, so a slow
/// viewer never delays the others and never holds more than the part it is writing plus one.
///
/// Threads: viewers live on the event-loop thread. Frames arrive on the capture thread, which
/// hands each frame to the loop once for all native-size viewers, and to one scaling task per
/// smaller size, which hands its rendition to the loop once for all viewers of that size.
public final class LivePreview: @unchecked Sendable {
    // @unchecked Sendable: `viewers` is touched only on the loop thread; everything the
    // capture thread and the scaling tasks read is behind `shared`.

    /// The multipart boundary (RFC 2046 §5.1.1), in the response's `Content-Type`.
    static let boundary = "shutterframe"
    static let contentType = "multipart/x-mixed-replace;boundary=\(boundary)"
    /// Sent first, so the first part's headers can follow.
    static let preamble = Array("--\(boundary)\r\n".utf8)
    /// Sent right after each frame, so a client knows at once that the part is complete.
    static let partEnd = Array("\r\n--\(boundary)\r\n".utf8)
    /// The next part's headers sent in advance, for browsers: Chromium shows a part only once
    /// it has parsed the *next* part's headers (crbug.com/527446), so headers sent with the
    /// next frame would show every frame one frame late. They cannot carry the next frame's
    /// `Content-Length`, which browsers do not need (they split parts at boundaries).
    static let advanceHeaders = Array("Content-Type: image/jpeg\r\n\r\n".utf8)
    static let partEndWithAdvanceHeaders = partEnd + advanceHeaders

    /// See `PreviewViewer.unsentByteLimit`.
    static let unsentByteLimit = 32 * 1024

    private let capture: CaptureService
    private let quality: Int
    let stallTimeoutMilliseconds: Int
    private let logger: Logger
    private let clock = SystemClock()

    private struct Shared {
        var loop: EventLoop?
        var hasNativeViewers = false
        /// The scaling task of each smaller width, fed the newest frame only.
        var scalers: [Int: Scaler] = [:]
        var statistics: [UInt64: PreviewViewerStatistics] = [:]
        var nextViewerID: UInt64 = 1
        /// The newest frame of each size not yet handed to its viewers, and whether the loop has
        /// been asked to: at most one hand-off per size is ever queued on the loop, so a busy
        /// loop skips to the newest frame instead of working through a queue of old ones.
        var awaitingDelivery: [Int: EncodedFrame] = [:]
        /// Counters of viewers that have left, so totals never go down.
        var departedSent: UInt64 = 0
        var departedSkipped: UInt64 = 0
    }
    private let shared = Mutex(Shared())

    /// Viewers by rendition width (0: the camera's own size). Loop thread only.
    private var viewers: [Int: [PreviewViewer]] = [:]

    init(capture: CaptureService, quality: Int, stallTimeoutMilliseconds: Int, logger: Logger) {
        self.capture = capture
        self.quality = quality
        self.stallTimeoutMilliseconds = stallTimeoutMilliseconds
        self.logger = logger
        capture.setFrameObserver { [weak self] frame in self?.frameArrived(frame) }
    }

    /// A new viewer (not yet watching: it joins when its connection starts the body).
    ///
    /// `width` asks for a smaller picture: at least that wide, made by TurboJPEG's scaled
    /// decode (n/8), so all widths map onto at most seven renditions.
    /// `advanceHeaders` sends each part's headers right after the previous frame, without
    /// `Content-Length` (see `LivePreview.advanceHeaders`).
    func makeViewer(framesPerSecond: Double?, width: Int?, advanceHeaders: Bool) -> PreviewViewer {
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
        return PreviewViewer(
            preview: self, key: key, framesPerSecond: framesPerSecond, advanceHeaders: advanceHeaders,
            statistics: statistics)
    }

    /// Each smaller size being made now, with the frames encoded at that size (once per frame
    /// for all of its viewers).
    var renditions: [(width: Int, framesEncoded: UInt64)] {
        shared.withLock { state in
            state.scalers.values.map { ($0.width, $0.framesEncoded) }.sorted { $0.width < $1.width }
        }
    }

    /// Every viewer's counters, and the totals including viewers that have left.
    var statistics: (viewers: [PreviewViewerStatistics], framesSent: UInt64, framesSkipped: UInt64) {
        shared.withLock { state in
            let viewers = state.statistics.values.sorted { $0.id < $1.id }
            return (
                viewers,
                viewers.reduce(state.departedSent) { $0 + $1.framesSent },
                viewers.reduce(state.departedSkipped) { $0 + $1.framesSkipped }
            )
        }
    }

    // MARK: Loop thread

    func add(_ viewer: PreviewViewer, loop: EventLoop) {
        assert(loop.inEventLoop)
        let wasWatched = !viewers.isEmpty
        viewers[viewer.key, default: []].append(viewer)
        let scaler = shared.withLock { state -> AsyncStream<EncodedFrame>.Continuation? in
            state.loop = loop
            state.statistics[viewer.statistics.id] = viewer.statistics
            guard viewer.key != 0 else {
                state.hasNativeViewers = true
                return nil
            }
            if let existing = state.scalers[viewer.key] { return existing.frames }
            let scaler = startScaler(width: viewer.key, loop: loop)
            state.scalers[viewer.key] = scaler
            return scaler.frames
        }
        if !wasWatched { capture.setLiveDemand(true) }
        logger.info(
            "preview viewer joined",
            [
                "viewer": String(viewer.statistics.id),
                "width": viewer.statistics.width.map(String.init) ?? "camera",
                "max_fps": viewer.statistics.maximumFramesPerSecond.map { String($0) } ?? "camera",
                "viewers": String(viewers.values.reduce(0) { $0 + $1.count }),
            ])
        // While the camera is gone, show the newest "no signal" picture at once.
        if let noSignal = capture.currentNoSignalFrame {
            if let scaler {
                scaler.yield(noSignal)
            } else {
                viewer.offer(PreviewPart(noSignal))
            }
        }
    }

    func remove(_ viewer: PreviewViewer) {
        viewers[viewer.key]?.removeAll { $0 === viewer }
        let sizeUnwatched = viewers[viewer.key]?.isEmpty ?? true
        if sizeUnwatched { viewers[viewer.key] = nil }
        let unwatched = viewers.isEmpty
        let scaler = shared.withLock { state -> AsyncStream<EncodedFrame>.Continuation? in
            if state.statistics.removeValue(forKey: viewer.statistics.id) != nil {
                state.departedSent += viewer.statistics.framesSent
                state.departedSkipped += viewer.statistics.framesSkipped
            }
            guard sizeUnwatched else { return nil }
            if viewer.key == 0 {
                state.hasNativeViewers = false
                return nil
            }
            return state.scalers.removeValue(forKey: viewer.key)?.frames
        }
        scaler?.finish()
        if unwatched { capture.setLiveDemand(false) }
        let milliseconds = clock.monotonicNow().nanoseconds(since: viewer.statistics.connectedAt) / 1_000_000
        logger.info(
            "preview viewer left",
            [
                "viewer": String(viewer.statistics.id), "frames_sent": String(viewer.statistics.framesSent),
                "frames_skipped": String(viewer.statistics.framesSkipped),
                "seconds": Timestamp.thousandths(milliseconds),
                "viewers": String(viewers.values.reduce(0) { $0 + $1.count }),
            ])
    }

    /// Turns the newest frame of size `key` into a part once and offers it to every viewer of it.
    private func deliverNewest(key: Int) {
        guard let frame = shared.withLock({ $0.awaitingDelivery.removeValue(forKey: key) }) else { return }
        guard let group = viewers[key], !group.isEmpty else { return }
        let part = PreviewPart(frame)
        for viewer in group { viewer.offer(part) }
    }

    // MARK: Capture thread and scaling tasks

    /// Called on the capture thread for every frame while anyone watches.
    private func frameArrived(_ frame: EncodedFrame) {
        let (loop, native, scalers) = shared.withLock {
            ($0.loop, $0.hasNativeViewers, $0.scalers.values.map(\.frames))
        }
        guard let loop else { return }
        if native { handOff(frame, key: 0, loop: loop) }
        for scaler in scalers { scaler.yield(frame) }
    }

    /// Makes `frame` the newest of size `key` and, unless a hand-off is already queued on the loop
    /// (which will take this frame instead of the one it was queued for), queues one.
    private func handOff(_ frame: EncodedFrame, key: Int, loop: EventLoop) {
        let queued = shared.withLock { state -> Bool in
            defer { state.awaitingDelivery[key] = frame }
            return state.awaitingDelivery[key] != nil
        }
        if !queued { loop.execute { self.deliverNewest(key: key) } }
    }

    /// A task that scales the newest frame to `width` and hands it to the loop; frames that
    /// arrive while it works replace each other, so a slow scaler drops frames, never queues.
    private func startScaler(width: Int, loop: EventLoop) -> Scaler {
        let (frames, continuation) = AsyncStream.makeStream(
            of: EncodedFrame.self, bufferingPolicy: .bufferingNewest(1))
        let scaler = Scaler(width: width, frames: continuation)
        let quality = quality
        let logger = logger
        // The task ends when the continuation finishes (the last viewer of this width left).
        Task.detached { [self] in
            let encoder: JPEGEncoder
            do {
                encoder = try JPEGEncoder(quality: quality)
            } catch {
                logger.error("live preview: no encoder", ["error": String(describing: error)])
                return
            }
            var loggedFailure = false
            for await frame in frames {
                do {
                    let scaled = try Self.scale(frame, minimumWidth: width, encoder: encoder)
                    scaler.countEncoded()
                    self.handOff(scaled, key: width, loop: loop)
                } catch  where !loggedFailure {
                    loggedFailure = true
                    logger.warning(
                        "live preview: a frame could not be scaled",
                        ["width": String(width), "error": String(describing: error)])
                } catch {}
            }
        }
        return scaler
    }

    private static func scale(_ frame: EncodedFrame, minimumWidth: Int, encoder: JPEGEncoder) throws
        -> EncodedFrame
    {
        let decoded = try JPEGDecoder.decodeRGB(frame.jpeg, minimumWidth: minimumWidth)
        let jpeg = try encoder.encodeRGB(decoded.pixels, width: decoded.width, height: decoded.height)
        return EncodedFrame(
            sequence: frame.sequence, capturedAt: frame.capturedAt, wallMilliseconds: frame.wallMilliseconds,
            width: decoded.width, height: decoded.height, jpeg: jpeg)
    }
}

/// The scaling task of one width: where frames go in, and how many it has encoded.
private final class Scaler: Sendable {
    let width: Int
    let frames: AsyncStream<EncodedFrame>.Continuation
    private let encoded = Atomic<UInt64>(0)

    init(width: Int, frames: AsyncStream<EncodedFrame>.Continuation) {
        self.width = width
        self.frames = frames
    }

    var framesEncoded: UInt64 { encoded.load(ordering: .relaxed) }
    func countEncoded() { encoded.add(1, ordering: .relaxed) }
}

/// One frame as a part of the multipart stream: built once per frame and size, shared by all
/// viewers of that size.
final class PreviewPart: Sendable {
    /// The part's header fields and the blank line.
    let head: [UInt8]
    let jpeg: [UInt8]
    let capturedAt: MonotonicInstant

    init(_ frame: EncodedFrame) {
        jpeg = frame.jpeg
        capturedAt = frame.capturedAt
        // Built from bytes, not string interpolation: it runs on the event loop for every frame.
        var head = Self.contentLengthField
        head.reserveCapacity(128)
        Self.appendDecimal(UInt64(frame.jpeg.count), to: &head)
        // X-Timestamp: capture time in Unix seconds, as ustreamer sends it.
        head += Self.timestampField
        let milliseconds = UInt64(max(0, frame.wallMilliseconds))
        Self.appendDecimal(milliseconds / 1000, to: &head)
        head.append(UInt8(ascii: "."))
        Self.appendDecimal(milliseconds % 1000, to: &head, digits: 3)
        head += Self.sequenceField
        Self.appendDecimal(frame.sequence, to: &head)
        head += Self.endOfHead
        self.head = head
    }

    private static let contentLengthField = Array("Content-Type: image/jpeg\r\nContent-Length: ".utf8)
    private static let timestampField = Array("\r\nX-Timestamp: ".utf8)
    private static let sequenceField = Array("\r\nX-Frame-Sequence: ".utf8)
    private static let endOfHead = Array("\r\n\r\n".utf8)

    /// Appends `value` in decimal, zero-padded to at least `digits` (at most 20) digits.
    static func appendDecimal(_ value: UInt64, to bytes: inout [UInt8], digits: Int = 1) {
        let digits = min(digits, 20)
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for 20 digits
        withUnsafeMutableBytes(of: &scratch) { buffer in
            var remaining = value
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            } while remaining > 0 || buffer.count - index < digits
            bytes.append(contentsOf: buffer[index...])
        }
    }
}

/// A viewer's counters, read by `/status` on any thread.
final class PreviewViewerStatistics: Sendable {
    let id: UInt64
    /// The rendition's width, or nil for the camera's own size.
    let width: Int?
    let maximumFramesPerSecond: Double?
    let connectedAt: MonotonicInstant
    private let sent = Atomic<UInt64>(0)
    private let skipped = Atomic<UInt64>(0)

    init(id: UInt64, width: Int?, maximumFramesPerSecond: Double?, connectedAt: MonotonicInstant) {
        self.id = id
        self.width = width
        self.maximumFramesPerSecond = maximumFramesPerSecond
        self.connectedAt = connectedAt
    }

    /// Frames written to the viewer.
    var framesSent: UInt64 { sent.load(ordering: .relaxed) }
    /// Frames replaced by a newer one before the viewer's socket had room for them.
    var framesSkipped: UInt64 { skipped.load(ordering: .relaxed) }

    func countSent() { sent.add(1, ordering: .relaxed) }
    func countSkipped() { skipped.add(1, ordering: .relaxed) }
}

/// One `/preview.mjpg` response: the body stream its connection pulls frames from.
final class PreviewViewer: HTTPBodyStream, @unchecked Sendable {
    // @unchecked Sendable: made by the handler on the loop thread and used only there.
    let key: Int
    let statistics: PreviewViewerStatistics
    private let preview: LivePreview
    private var limiter: FrameRateLimiter
    /// The newest part not yet written: the viewer's one slot.
    private var pending: PreviewPart?
    private var writer: HTTPStreamWriter?
    private var preambleSent = false
    private var newestOffered: MonotonicInstant?
    private let advanceHeaders: Bool

    init(
        preview: LivePreview, key: Int, framesPerSecond: Double?, advanceHeaders: Bool,
        statistics: PreviewViewerStatistics
    ) {
        self.preview = preview
        self.key = key
        self.advanceHeaders = advanceHeaders
        self.statistics = statistics
        limiter = FrameRateLimiter(framesPerSecond: framesPerSecond)
    }

    var stallTimeoutMilliseconds: Int? { preview.stallTimeoutMilliseconds }
    /// About one frame of backlog in the kernel at most: a viewer that reads slowly skips to the
    /// newest frame instead of receiving ones that waited seconds in a send buffer.
    var unsentByteLimit: Int? { LivePreview.unsentByteLimit }

    func start(_ writer: HTTPStreamWriter) {
        self.writer = writer
        preview.add(self, loop: writer.loop)
    }

    func stop() {
        guard let writer else { return }
        assert(writer.loop.inEventLoop)
        self.writer = nil
        pending = nil
        preview.remove(self)
    }

    /// Puts `part` in the slot (replacing an unwritten one) unless the fps cap says no, or it is no
    /// newer than a part already offered (a scaler replaced after its size was left and joined
    /// again may still finish an older frame).
    func offer(_ part: PreviewPart) {
        guard writer != nil else { return }
        if let newest = newestOffered, part.capturedAt <= newest { return }
        guard limiter.admit(part.capturedAt) else { return }
        newestOffered = part.capturedAt
        if pending != nil { statistics.countSkipped() }
        pending = part
        writer?.wake()
    }

    func nextOutput() -> HTTPStreamOutput {
        if !preambleSent {
            preambleSent = true
            return .chunks(
                advanceHeaders ? [LivePreview.preamble, LivePreview.advanceHeaders] : [LivePreview.preamble])
        }
        guard let part = pending else { return .waiting }
        pending = nil
        statistics.countSent()
        if advanceHeaders { return .chunks([part.jpeg, LivePreview.partEndWithAdvanceHeaders]) }
        return .chunks([part.head, part.jpeg, LivePreview.partEnd])
    }
}
