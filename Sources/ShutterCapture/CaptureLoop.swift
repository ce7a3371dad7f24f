import ShutterCamera
import ShutterSystem

/// The capture thread's loop: open, read frames, encode those someone waits for, publish;
/// on failure, close and reopen until the camera returns.
final class CaptureLoop: @unchecked Sendable {
    // @unchecked Sendable: created by the actor, then used only by the capture thread, except
    // `interruptCamera()`, which only calls the source's one thread-safe method.
    private let source: any CameraSource
    private let encoder: JPEGEncoder
    private let shared: CaptureShared
    private let reopenIntervalNanoseconds: UInt64
    private let idleAfterNanoseconds: UInt64
    private let clock: any Clock
    private let logger: Logger
    /// When someone last wanted a frame, ran a command, or kept the camera awake.
    private var lastDemand: MonotonicInstant
    private var lastFailure: CaptureError?
    /// When the "no signal" frame was last drawn, so live viewers get one about once a second.
    private var lastNoSignal: (at: MonotonicInstant, reason: CaptureError)?
    /// The source's own drop counters, if it keeps any (looked up once, not per frame).
    private let dropCounting: (any FrameDropCounting)?
    /// The source's lending of its frame buffer, if it lends it (looked up once), so the
    /// preview's text is drawn into the frame itself rather than into a copy.
    private let bufferLending: (any FrameBufferLending)?
    /// How YUV frames are turned before the encode; nil for the identity, so the default
    /// configuration does not even test it per frame beyond this optional.
    private let orientation: Orientation?
    /// Turns camera JPEGs; nil for the identity, which keeps MJPEG byte-exact passthrough.
    private let jpegTransformer: JPEGTransformer?
    /// Whether the log has said that frames are being re-encoded to turn them (said once).
    private var reportedReencoding = false
    /// The burned-in text, when it is on for either target; nil by default.
    private let overlay: CaptureOverlay?
    /// Draws the preview's text on every frame published, once for all viewers; nil unless the
    /// overlay is on for the preview.
    private let previewRenderer: TextOverlay?
    /// Why the preview's text was last left off a frame (logged once until it changes).
    private var lastOverlayFailure: String?
    /// Decodes an MJPEG camera's frames for the preview's text; nil unless that text is on.
    private let planarDecoder: JPEGDecoder.PlanarDecoder?

    /// How often the "no signal" frame is redrawn while the camera is gone (its clock advances,
    /// so live viewers see the daemon is alive).
    static let noSignalRefreshNanoseconds: UInt64 = 950_000_000

    init(
        source: any CameraSource, encoder: JPEGEncoder, shared: CaptureShared,
        reopenIntervalNanoseconds: UInt64, idleAfterNanoseconds: UInt64, orientation: Orientation = .identity,
        overlay: CaptureOverlay? = nil, clock: any Clock, logger: Logger
    ) throws {
        self.overlay = overlay
        self.previewRenderer =
            overlay?.onPreview == true
            ? TextOverlay(style: overlay!.style) { reason in
                logger.warning(
                    "overlay font cannot be read: drawing the preview's text with the built-in font",
                    ["reason": reason])
            } : nil
        self.planarDecoder = overlay?.onPreview == true ? try JPEGDecoder.PlanarDecoder() : nil
        self.orientation = orientation.isIdentity ? nil : orientation
        self.jpegTransformer = orientation.isIdentity ? nil : try JPEGTransformer(orientation: orientation)
        self.idleAfterNanoseconds = idleAfterNanoseconds
        self.source = source
        self.dropCounting = source as? any FrameDropCounting
        self.bufferLending = source as? any FrameBufferLending
        self.encoder = encoder
        self.shared = shared
        self.reopenIntervalNanoseconds = reopenIntervalNanoseconds
        self.clock = clock
        self.lastDemand = clock.monotonicNow()
        self.logger = logger
    }

    /// Makes a frame wait in the source end early (called by `CaptureService.stop`).
    func interruptCamera() {
        source.interruptWait()
    }

    func run() {
        while !shared.isStopping {
            shared.phase.enter(.opening)
            if open() {
                shared.phase.enter(.streaming)
                let outcome = capture()
                source.stop()
                if shared.isStopping { break }
                if outcome == .idle {
                    waitForDemand()
                    continue
                }
            }
            shared.phase.enter(.failed)
            waitBeforeReopening()
        }
        shared.failPendingCommands(CaptureError.stopped)
        shared.phase.enter(.stopped)
    }

    /// Opens the camera; on failure records why (logged once until it changes).
    private func open() -> Bool {
        do {
            try source.start()
            shared.name = source.name
            shared.driver = source.driverName
            // Everything downstream (records, /status, the page, the preview's sizes) sees the
            // picture as turned.
            shared.mode = orientation?.mode(source.mode) ?? source.mode
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
            let answeredFromHand = shared.answeredFromHand.exchange(false, ordering: .relaxed)
            if answeredFromHand || shared.hasDemand {
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
                let received = clock.monotonicNow()
                shared.counters.captured.add(1, ordering: .relaxed)
                if let dropCounting {
                    shared.counters.corrupt.store(dropCounting.corruptFrames, ordering: .relaxed)
                    shared.counters.warmupDropped.store(dropCounting.warmupFramesDropped, ordering: .relaxed)
                }
                if shared.exchange.failure != nil { shared.exchange.clearFailure() }
                let wanted = shared.exchange.wantsFrame()
                guard wanted || keepsUnwantedFrame(frame) else { continue }
                let start = clock.monotonicNow()
                if let overlay {
                    try publishWithOverlay(consume frame, overlay: overlay, start: start, received: received)
                    continue
                }
                let jpeg: [UInt8]
                var (width, height) = (frame.width, frame.height)
                switch frame.image {
                case .jpeg(let bytes):
                    if let jpegTransformer {
                        (jpeg, width, height) = try jpegTransformer.transform(bytes, encoder: encoder)
                        reportReencodingOnce(jpegTransformer)
                    } else {
                        jpeg = bytes
                    }
                case .yuv(let image):
                    if let orientation {
                        let turned = orientation.apply(to: image)
                        (width, height) = (turned.width, turned.height)
                        jpeg = try encoder.encode(turned)
                    } else {
                        jpeg = try encoder.encode(image)
                    }
                }
                // A frame only kept (nobody waited) was not handed to anyone.
                if wanted { shared.counters.encoded.add(1, ordering: .relaxed) }
                let encodeNanoseconds = clock.monotonicNow().nanoseconds(since: start)
                if case .yuv = frame.image {
                    shared.counters.encodeTime.observe(nanoseconds: encodeNanoseconds)
                }
                let encoded = EncodedFrame(
                    sequence: frame.sequence, capturedAt: frame.capturedAt,
                    wallMilliseconds: frame.wallMilliseconds, width: width, height: height, jpeg: jpeg,
                    encodeNanoseconds: encodeNanoseconds, receivedAt: received)
                if wanted {
                    shared.exchange.publish(encoded)
                } else {
                    shared.exchange.keep(encoded)
                }
            } catch {
                failed(error)
                return .failed
            }
        }
        return .stopping
    }

    /// Publishes `frame` with the burned-in text where it is on: drawn into the Y'CbCr planes
    /// before the encode (an MJPEG frame is decoded to its planes first, and turned there), once
    /// per frame whoever watches. When only stored pictures carry the text, MJPEG stays
    /// passthrough here and the frame as captured goes along for the store path to draw on.
    ///
    /// The frame is consumed so that its planes can be this function's alone: the text is drawn
    /// in place when nobody else holds them (a turned or decoded frame, or a buffer the source
    /// lends), and otherwise in the encoder's own copy.
    private func publishWithOverlay(
        _ frame: consuming RawFrame, overlay: CaptureOverlay, start: MonotonicInstant,
        received: MonotonicInstant
    )
        throws
    {
        let (sequence, capturedAt, wallMilliseconds) = (
            frame.sequence, frame.capturedAt, frame.wallMilliseconds
        )
        var (width, height) = (frame.width, frame.height)
        var image: YUVImage?
        var jpeg: [UInt8]?
        var cameraJPEG: [UInt8]?  // what an MJPEG camera sent
        // Whether `image` was made for this frame (turned or decoded), so nobody else holds it.
        var imageIsNew = false
        switch (consume frame).image {
        case .yuv(let captured):
            if let orientation {
                image = orientation.apply(to: captured)
                imageIsNew = true
            } else {
                image = captured
            }
        case .jpeg(let bytes):
            cameraJPEG = bytes
            if let planarDecoder {
                do {
                    let decoded = try planarDecoder.decode(bytes)
                    image = orientation?.apply(to: decoded) ?? decoded
                    imageIsNew = true
                } catch {
                    reportOverlayFailure(error)
                }
            }
            if image == nil {
                if let jpegTransformer {
                    (jpeg, width, height) = try jpegTransformer.transform(bytes, encoder: encoder)
                    reportReencodingOnce(jpegTransformer)
                } else {
                    jpeg = bytes
                }
            }
        }
        if let plain = image { (width, height) = (plain.width, plain.height) }
        var pictureSourceJPEG: [UInt8]?
        if image != nil, jpegTransformer == nil, let cameraJPEG,
            overlay.picturesNeedTheFrameAsCaptured, !overlay.onPictures
        {
            // Preview-only text on an MJPEG camera: pictures keep the camera's bytes, never a
            // decode and re-encode. Turned, they take the planes already decoded and turned for
            // the preview instead, encoded only if a picture is stored: turning every frame
            // losslessly (about 11 ms at 1280x720) for pictures nobody may take would cost more.
            pictureSourceJPEG = cameraJPEG
        }
        let pictureSource: RawImage? =
            overlay.picturesNeedTheFrameAsCaptured
            ? (pictureSourceJPEG.map { .jpeg($0) } ?? image.map { .yuv($0) } ?? jpeg.map { .jpeg($0) }) : nil
        let planesEncoded = image != nil
        if planesEncoded {
            if let previewRenderer {
                let fields = OverlayTemplate.Fields(
                    wallMilliseconds: wallMilliseconds, camera: source.name, frame: sequence,
                    width: width, height: height)
                let lines = overlay.template.expand(fields, utc: overlay.utc)
                // The planes are drawn on in place only when that saves the copy and they are
                // this frame's alone: full range (limited range is expanded into the encoder's
                // buffer anyway, and the text is drawn there as before), not kept clean for a
                // picture, and new or lent by the source (which then holds no reference).
                // Anything else would be copied on write, a fresh 1.8 MB each frame.
                let planesKeptForPictures = pictureSource != nil && pictureSourceJPEG == nil
                let inPlaceCandidate = image!.isFullRange && !planesKeptForPictures
                var lent = false
                if inPlaceCandidate, !imageIsNew, let bufferLending {
                    lent = bufferLending.lendFrameBuffer()
                }
                if inPlaceCandidate, imageIsNew || lent {
                    previewRenderer.draw(lines, into: &image!)
                    jpeg = try encoder.encode(image!)
                    if lent {
                        // Back to the source before the next frame: it converts every sample
                        // again, so the text does not reach the next frame.
                        bufferLending?.returnFrameBuffer(image.take()!)
                    }
                } else {
                    let plain = image!
                    jpeg = try encoder.encode(plain) {
                        previewRenderer.draw(lines, intoPlanes: $0, of: plain)
                    }
                }
            } else {
                jpeg = try encoder.encode(image!)
            }
        }
        shared.counters.encoded.add(1, ordering: .relaxed)
        let encodeNanoseconds = clock.monotonicNow().nanoseconds(since: start)
        if planesEncoded { shared.counters.encodeTime.observe(nanoseconds: encodeNanoseconds) }
        shared.exchange.publish(
            EncodedFrame(
                sequence: sequence, capturedAt: capturedAt, wallMilliseconds: wallMilliseconds,
                width: width, height: height, jpeg: jpeg ?? [],
                encodeNanoseconds: encodeNanoseconds, pictureSource: pictureSource, receivedAt: received))
    }

    /// Whether a frame nobody waits for is kept all the same (`FrameExchange.keep`): a camera
    /// JPEG passed through untouched, which costs only its reference to keep, so that
    /// `GET /preview.jpg` and `POST /snap?max_age_ms` between waits are answered at once from
    /// the newest frame instead of waiting for the next one.
    /// Frames that need work (an encode, a turn or flip, the overlay's text) are still skipped:
    /// an idle daemon spends no CPU on JPEG.
    private func keepsUnwantedFrame(_ frame: borrowing RawFrame) -> Bool {
        guard overlay == nil, jpegTransformer == nil, case .jpeg = frame.image else { return false }
        return true
    }

    /// Logs, once until the reason changes, why a frame went out without the preview's text.
    private func reportOverlayFailure(_ error: any Error) {
        let reason = String(describing: error)
        guard reason != lastOverlayFailure else { return }
        lastOverlayFailure = reason
        logger.warning(
            "cannot draw the overlay on this camera's frames: passing them on without it",
            ["camera": source.name, "error": reason])
    }

    /// Says once that JPEG frames are turned by re-encoding (their size is not whole MCUs).
    private func reportReencodingOnce(_ transformer: JPEGTransformer) {
        guard !reportedReencoding, transformer.reencodedFrames > 0 else { return }
        reportedReencoding = true
        logger.notice(
            "camera frames are not whole JPEG blocks: turning them by decode and re-encode, not losslessly",
            ["camera": source.name, "orientation": transformer.orientation.description])
    }

    /// Waits, with the camera closed, until a frame or a command is wanted, a job starts, or
    /// capture stops: each of those rings `shared.wakeup`.
    private func waitForDemand() {
        shared.phase.enter(.idle)
        while !shared.isStopping && !shared.hasDemand {
            _ = clock.wait(for: shared.wakeup, until: nil)
        }
    }

    /// Runs queued camera commands, between frames, on this thread.
    private func runCommands() {
        for command in shared.takeCommands() { command(source, nil) }
    }

    private func failed(_ error: any Error) {
        shared.counters.failures.add(1, ordering: .relaxed)
        let failure = CaptureError.failure(error, camera: source.name)
        // A repeating failure is logged once until it changes (the ustreamer habit).
        if failure != lastFailure {
            logger.error("camera failed", ["camera": source.name, "error": String(describing: error)])
            lastFailure = failure
        }
        shared.exchange.fail(failure)
        shared.failPendingCommands(failure)
        publishNoSignal(failure)
    }

    /// Waits until the next reopen attempt, refreshing the "no signal" frame about once a second
    /// and answering commands (with the failure) and stop as they come.
    private func waitBeforeReopening() {
        let deadline = clock.monotonicNow().advanced(by: reopenIntervalNanoseconds)
        while !shared.isStopping && clock.monotonicNow() < deadline {
            shared.failPendingCommands(
                lastFailure ?? .cameraUnavailable(.notStarted, camera: source.name))
            if let lastFailure { publishNoSignal(lastFailure) }
            let nextRefresh = (lastNoSignal?.at ?? clock.monotonicNow()).advanced(
                by: Self.noSignalRefreshNanoseconds)
            _ = clock.wait(for: shared.wakeup, until: min(deadline, nextRefresh))
        }
    }

    /// Draws the "no signal" frame with the time and `reason`: at once for a new reason, else
    /// at most about once a second.
    private func publishNoSignal(_ reason: CaptureError) {
        let drawnAt = clock.monotonicNow()
        if let last = lastNoSignal, last.reason == reason,
            drawnAt.nanoseconds(since: last.at) < Self.noSignalRefreshNanoseconds
        {
            return
        }
        lastNoSignal = (drawnAt, reason)
        let mode = shared.mode
        let now = clock.wallMillisecondsNow()
        let image = NoSignalPattern.render(
            width: max(64, mode.width), height: max(48, mode.height), wallMilliseconds: now,
            reason: reason.description)
        guard let jpeg = try? encoder.encode(image) else { return }
        shared.exchange.publishNoSignal(
            EncodedFrame(
                sequence: 0, capturedAt: clock.monotonicNow(), wallMilliseconds: now, width: image.width,
                height: image.height, jpeg: jpeg))
    }
}
