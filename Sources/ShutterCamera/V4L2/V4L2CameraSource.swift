import CV4L2
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A V4L2 camera (any UVC webcam) read with memory-mapped streaming I/O.
///
/// `start` negotiates a format (MJPEG passed through when offered at the requested size, else
/// YUYV, NV12 or YU12 rearranged into planar Y'CbCr; any other format converted to YU12 by
/// libv4lconvert), `nextFrame` waits with `poll` and copies each
/// frame out of its buffer, which goes straight back to the driver. After a throw from
/// `nextFrame` the owner calls `stop()` and later `start()` again; that reopens the device.
///
/// Owned by one thread, like every `CameraSource`: the capture thread calls every method,
/// including `controls()` and `setControls(_:)`, and reads the counters.
public final class V4L2CameraSource: CameraSource {
    /// The device node, such as `/dev/video0`.
    public let path: String
    /// The mode asked for at init.
    public let requested: CameraMode
    /// Pixel formats to use, best first.
    public let formatPreference: [PixelFormat]
    /// How long after each `start` frames are thrown away while exposure and white balance settle.
    public let warmupMilliseconds: Int
    /// The negotiated size and rate after `start`; the requested mode before.
    public private(set) var mode: CameraMode
    /// The negotiated pixel format after `start` (`.yuv420` when libv4lconvert converts to it).
    public private(set) var pixelFormat: PixelFormat?
    /// The camera's own format when libv4lconvert converts it, nil when Shutter reads it natively.
    public private(set) var convertedFourCC: UInt32?
    /// The driver's name for the camera, once it has been opened.
    public private(set) var cardName: String?
    /// Frames dropped because they were damaged (bad JPEG, short, or flagged by the driver), since init.
    public private(set) var corruptFrames: UInt64 = 0
    /// Frames dropped during warm-up, since init.
    public private(set) var warmupFramesDropped: UInt64 = 0

    /// The card name once known, else the path.
    public var name: String { cardName ?? path }
    /// The driver's own name (`uvcvideo`) once opened; `v4l2` before.
    public private(set) var driverName = "v4l2"

    /// The number of buffers to ask for: one being copied, the rest being filled, with slack for jitter.
    static let bufferCount = 4

    private let clock: any Clock
    private let logger: Logger
    private var session: Session?
    private var hasStopped = false
    /// Control values set through `setControls`, applied again on every `start`: a camera that
    /// was unplugged and plugged back in has forgotten them.
    private var controlSettings: [String: Int] = [:]

    /// Everything that exists between `start` and `stop`.
    private final class Session {
        let device: V4L2Device
        let buffers: [UnsafeMutableRawBufferPointer]
        /// Exactly one of `decoder` and `converter` is set. The decoder is optional rather than
        /// wrapped in an enum so it is mutated in place and its image buffer is not copied.
        var decoder: V4L2FrameDecoder?
        let converter: V4LConverter?
        let frameTimeoutNanoseconds: UInt64
        let warmupEnds: MonotonicInstant
        var sequencer = FrameSequencer()
        /// The last reason a frame was dropped, so a repeating one is logged once.
        var lastCorruption: String?

        init(
            device: V4L2Device, buffers: [UnsafeMutableRawBufferPointer], frames: Negotiated.Frames,
            frameTimeoutNanoseconds: UInt64, warmupEnds: MonotonicInstant
        ) {
            self.device = device
            self.buffers = buffers
            switch frames {
            case .native(let decoder):
                self.decoder = decoder
                self.converter = nil
            case .converted(let converter):
                self.decoder = nil
                self.converter = converter
            }
            self.frameTimeoutNanoseconds = frameTimeoutNanoseconds
            self.warmupEnds = warmupEnds
        }
    }

    /// A source for the camera at `path`, to be opened in `requested` mode or the closest the camera offers.
    ///
    /// Timeouts and warm-up are measured on `clock`, and buffer timestamps on CLOCK_MONOTONIC are
    /// used as is, so `clock` must read the system monotonic clock.
    public init(
        path: String, requested: CameraMode,
        formatPreference: [PixelFormat] = [.mjpeg, .yuyv, .nv12, .yuv420],
        warmupMilliseconds: Int = 500, clock: any Clock = SystemClock(), logger: Logger
    ) {
        self.path = path
        self.requested = requested
        self.formatPreference = formatPreference
        self.warmupMilliseconds = max(warmupMilliseconds, 0)
        self.mode = requested
        self.clock = clock
        self.logger = logger.with("device", path)
    }

    deinit { session.map(Self.release) }

    /// Opens the device, negotiates the format and rate, maps the buffers and starts streaming;
    /// calling it again while started does nothing.
    ///
    /// Throws `CameraError.permissionDenied`, `.busy`, `.disconnected`, or `.unsupported` when the
    /// node is not a streaming video capture device, or offers none of `formatPreference` and
    /// nothing libv4lconvert can convert.
    public func start() throws {
        guard session == nil else { return }
        let device = try V4L2Device.open(path)
        var buffers: [UnsafeMutableRawBufferPointer] = []
        var converter: V4LConverter?
        do {
            let negotiated = try negotiate(device)
            if case .converted(let created) = negotiated.frames { converter = created }
            applyRememberedControls(device)
            let count = try device.requestBuffers(count: Self.bufferCount)
            guard count > 0 else {
                throw CameraError.unsupported("\(path) allocated no capture buffers (out of memory?)")
            }
            for index in 0..<count {
                let (offset, length) = try device.queryBuffer(index: index)
                buffers.append(try device.mapBuffer(offset: offset, length: length))
                try device.queue(index: index)
            }
            try device.streamOn()
            let now = clock.monotonicNow()
            session = Session(
                device: device, buffers: buffers, frames: negotiated.frames,
                frameTimeoutNanoseconds: Self.frameTimeoutNanoseconds(fps: negotiated.fps),
                warmupEnds: now.advanced(by: UInt64(warmupMilliseconds) * 1_000_000))
            hasStopped = false
            logger.info(
                "streaming",
                [
                    "format": FourCC.string(negotiated.fourcc), "size": "\(mode.width)x\(mode.height)",
                    "fps": negotiated.fps.map { String($0) } ?? "unknown",
                    "bytesperline": String(negotiated.bytesPerLine), "buffers": String(count),
                    "conversion": converter == nil ? "none" : "libv4lconvert to YU12",
                ])
        } catch {
            Self.release(device: device, buffers: buffers, converter: converter)
            throw error
        }
    }

    /// Stops streaming, unmaps and frees the buffers and closes the device; `nextFrame` then throws
    /// `CameraError.stopped` until the next `start`.
    public func stop() {
        if let session { Self.release(session) }
        session = nil
        hasStopped = true
    }

    /// Waits for the next good frame and returns a copy of it.
    ///
    /// Throws `CameraError.stalled` when no frame arrives within max(1 s, 5 frame intervals) (plus
    /// any warm-up still to run), `.disconnected` when the camera goes away. Damaged frames are
    /// counted in `corruptFrames` and skipped within the same time budget.
    public func nextFrame() throws -> RawFrame {
        guard let session else { throw hasStopped ? CameraError.stopped : CameraError.notStarted }
        let started = clock.monotonicNow()
        let deadline = max(started, session.warmupEnds).advanced(by: session.frameTimeoutNanoseconds)
        var dropped = 0
        while true {
            // Checked on every pass, so a camera sending only damaged frames also ends in `stalled`.
            let now = clock.monotonicNow()
            guard now < deadline else {
                let waited = now.nanoseconds(since: started) / 1_000_000
                let damage = dropped > 0 ? " (\(dropped) damaged frames dropped)" : ""
                throw CameraError.stalled("\(path) delivered no good frame in \(waited) ms\(damage)")
            }
            // Wait first, then dequeue: a frame is rarely ready already, and this way each frame
            // costs one poll and one VIDIOC_DQBUF instead of a failed DQBUF before the poll.
            let remaining = Int((deadline.nanoseconds(since: now) + 999_999) / 1_000_000)
            if case .failed(let events) = try session.device.waitForFrame(timeoutMilliseconds: remaining) {
                throw CameraError.disconnected("\(path): poll reported events 0x\(String(events, radix: 16))")
            }
            guard let buffer = try session.device.dequeue() else { continue }
            guard buffer.index < session.buffers.count else {
                throw CameraError.device(SystemError(errno: EINVAL, call: "VIDIOC_DQBUF"))
            }
            let arrived = clock.monotonicNow()
            if arrived < session.warmupEnds {
                warmupFramesDropped += 1
                try session.device.queue(index: buffer.index)
                continue
            }
            let outcome = decode(buffer, in: session)
            // The frame is copied out: the driver can fill the buffer again.
            try session.device.queue(index: buffer.index)
            switch outcome {
            case .corrupt(let reason):
                corruptFrames += 1
                dropped += 1
                // Logged once per kind of damage and session; `corruptFrames` counts every one.
                if reason != session.lastCorruption {
                    logger.warning("dropped a damaged frame", ["reason": reason])
                    session.lastCorruption = reason
                }
            case .image(let image, let width, let height):
                return RawFrame(
                    sequence: session.sequencer.number(driverSequence: buffer.sequence),
                    capturedAt: Self.captureInstant(
                        timestampNanoseconds: buffer.timestampNanoseconds, flags: buffer.flags, now: arrived),
                    wallMilliseconds: clock.wallMillisecondsNow(), image: image, width: width, height: height)
            }
        }
    }

    /// The camera's controls with their current values.
    ///
    /// Uses the open device while started, else opens it for the call. Call it from the thread
    /// that owns the source, never while another thread runs `nextFrame`.
    public func controls() throws -> [CameraControl] {
        try withDevice { try $0.controls() }
    }

    /// Sets controls by name (`CameraControl.name`), checking every name and value first; they
    /// are set again after each `start`. Same threading rule as `controls()`.
    ///
    /// Throws `CameraError.invalidControl` naming an unknown control, a value outside a control's
    /// range, or a value the camera refused.
    public func setControls(_ values: [String: Int]) throws {
        try withDevice { device in
            for (control, value) in try CameraControl.plan(values, for: device.controls()) {
                try device.setControlValue(id: control.id, name: control.name, value: Int32(clamping: value))
                if control.kind != .button { controlSettings[control.name] = value }
            }
        }
    }

    // MARK: - Negotiation

    /// What `negotiate` settled on.
    private struct Negotiated {
        /// How frames become images.
        enum Frames {
            /// Shutter reads the format itself.
            case native(V4L2FrameDecoder)
            /// libv4lconvert converts it to YU12.
            case converted(V4LConverter)
        }

        var fourcc: UInt32
        var frames: Frames
        var bytesPerLine: Int
        var fps: Double?
    }

    /// Checks the node, picks and sets the format and rate, and updates `mode`.
    private func negotiate(_ device: V4L2Device) throws -> Negotiated {
        let capabilities = try device.capabilities()
        cardName = capabilities.card
        driverName = capabilities.driver
        guard capabilities.isStreamingVideoCapture else {
            throw CameraError.unsupported(
                "\(path) (\(capabilities.card), driver \(capabilities.driver)) is not a video capture device with streaming I/O; UVC cameras also create a metadata node, so try the next /dev/video number"
            )
        }
        let wanted = Set(formatPreference.flatMap(\.fourccs))
        let requestedSize = FrameSize(width: requested.width, height: requested.height)
        let offered = try device.offeredFormats(near: requestedSize, include: wanted.contains)
        let choice: FormatNegotiation.Choice
        do {
            choice = try FormatNegotiation.choose(
                offered: offered, requested: requested, preference: formatPreference)
        } catch CameraError.unsupported(let reason) {
            return try negotiateConversion(device, nativeFailure: reason)
        }
        if !choice.isExactSize {
            logger.notice(
                "the camera does not offer the requested size; using the closest",
                ["requested": requestedSize.description, "chosen": choice.size.description])
        }
        // vidioc-g-fmt.rst: the driver adjusts what it cannot do and returns what it chose.
        let set = try device.setFormat(
            pixelFormat: choice.fourcc, width: choice.size.width, height: choice.size.height)
        guard set.fourcc == choice.fourcc else {
            throw CameraError.unsupported(
                "\(path) was asked for \(FourCC.string(choice.fourcc)) and chose \(FourCC.string(set.fourcc))"
            )
        }
        let fps = try negotiateRate(device, interval: choice.interval)
        // Read back after setting the rate too: the stride is whatever the driver holds now.
        let format = try device.format()
        guard format.width > 0, format.height > 0 else {
            throw CameraError.unsupported("\(path) reports a \(format.width)x\(format.height) format")
        }
        if format.width != choice.size.width || format.height != choice.size.height {
            logger.notice(
                "the driver adjusted the size",
                ["asked": choice.size.description, "chosen": "\(format.width)x\(format.height)"])
        }
        let minimumStride = choice.pixelFormat == .yuyv ? (format.width + 1) / 2 * 4 : format.width
        let bytesPerLine = max(format.bytesPerLine, minimumStride)
        pixelFormat = choice.pixelFormat
        convertedFourCC = nil
        mode = CameraMode(
            width: format.width, height: format.height, fps: fps.map { Int($0.rounded()) } ?? requested.fps)
        return Negotiated(
            fourcc: choice.fourcc,
            frames: .native(
                V4L2FrameDecoder(
                    pixelFormat: choice.pixelFormat, width: format.width, height: format.height,
                    bytesPerLine: bytesPerLine)),
            bytesPerLine: bytesPerLine, fps: fps)
    }

    /// Sets the camera to the format libv4lconvert picks for YU12 frames near the requested size,
    /// for a camera that offers none of `formatPreference`.
    ///
    /// Throws `CameraError.unsupported` with both reasons when libv4lconvert cannot help either.
    private func negotiateConversion(_ device: V4L2Device, nativeFailure: String) throws -> Negotiated {
        let converter = try V4LConverter(descriptor: device.descriptor, path: path)
        do {
            var source: (fourcc: UInt32, width: Int, height: Int)
            do {
                source = try converter.sourceFormat(width: requested.width, height: requested.height)
            } catch CameraError.unsupported(let reason) {
                throw CameraError.unsupported("\(nativeFailure); \(reason)")
            }
            // libv4lconvert 1.22 (Debian 12) keeps a 64-bit mask of its source formats for UVC
            // cameras but has more than 64, so some alias: for an RGB24 camera it names HSV24.
            // A format the camera does not offer is that bug; its own first format is used instead.
            let offered = try device.formats().map(\.fourcc)
            if !offered.contains(source.fourcc), let first = offered.first {
                logger.notice(
                    "libv4lconvert named a format the camera does not offer; using the camera's first",
                    ["named": FourCC.string(source.fourcc), "using": FourCC.string(first)])
                source.fourcc = first
            }
            logger.notice(
                "no format Shutter reads natively; converting with libv4lconvert",
                [
                    "format": FourCC.string(source.fourcc),
                    "requested": "\(requested.width)x\(requested.height)",
                    "chosen": "\(source.width)x\(source.height)",
                ])
            let set = try device.setFormat(
                pixelFormat: source.fourcc, width: source.width, height: source.height)
            guard set.fourcc == source.fourcc else {
                throw CameraError.unsupported(
                    "\(path) was asked for \(FourCC.string(source.fourcc)) and chose \(FourCC.string(set.fourcc))"
                )
            }
            let rates = try device.frameIntervals(
                pixelFormat: set.fourcc, width: set.width, height: set.height)
            let fps = try negotiateRate(device, interval: rates.interval(closestTo: requested.fps))
            let format = try device.format()
            try converter.use(format)
            pixelFormat = .yuv420
            convertedFourCC = format.fourcc
            mode = CameraMode(
                width: format.width, height: format.height,
                fps: fps.map { Int($0.rounded()) } ?? requested.fps)
            return Negotiated(
                fourcc: format.fourcc, frames: .converted(converter), bytesPerLine: format.bytesPerLine,
                fps: fps)
        } catch {
            converter.close()
            throw error
        }
    }

    /// Sets the chosen frame interval when the driver allows it and returns the rate it runs at.
    ///
    /// vidioc-g-parm.rst: `timeperframe` can be set only with V4L2_CAP_TIMEPERFRAME, and the
    /// driver writes back the nearest interval it supports.
    private func negotiateRate(_ device: V4L2Device, interval: FrameInterval) throws -> Double? {
        let current = try device.frameInterval()
        guard current.isSettable else {
            logger.notice(
                "the driver does not let the frame rate be set",
                ["fps": current.interval?.fps.map { String($0) } ?? "unknown"])
            return current.interval?.fps
        }
        let chosen = try device.setFrameInterval(interval) ?? device.frameInterval().interval
        if let fps = chosen?.fps, Int(fps.rounded()) != requested.fps {
            logger.notice(
                "the camera runs at another rate", ["requested": String(requested.fps), "fps": String(fps)])
        }
        return chosen?.fps
    }

    /// Sets the remembered controls on a freshly opened device, logging (not throwing) refusals:
    /// a setting that no longer applies must not keep the camera from starting.
    private func applyRememberedControls(_ device: V4L2Device) {
        guard !controlSettings.isEmpty else { return }
        do {
            for (control, value) in try CameraControl.plan(controlSettings, for: device.controls()) {
                do {
                    try device.setControlValue(
                        id: control.id, name: control.name, value: Int32(clamping: value))
                } catch {
                    logger.warning(
                        "could not restore a control",
                        ["control": control.name, "error": String(describing: error)])
                }
            }
        } catch {
            logger.warning("could not restore the controls", ["error": String(describing: error)])
        }
    }

    // MARK: - Frames

    private func decode(_ buffer: V4L2Device.DequeuedBuffer, in session: Session) -> V4L2FrameDecoder.Outcome
    {
        // buffer.rst: V4L2_BUF_FLAG_ERROR marks a frame the driver knows is damaged (uvcvideo: a
        // USB transfer was lost); its data may still be returned but must not be trusted.
        if buffer.flags & UInt32(V4L2_BUF_FLAG_ERROR) != 0 {
            return .corrupt("the driver flagged the frame as damaged")
        }
        let memory = session.buffers[buffer.index]
        let bytes = UnsafeRawBufferPointer(rebasing: memory[0..<min(buffer.bytesUsed, memory.count)])
        if let converter = session.converter { return converter.convert(bytes) }
        return session.decoder?.decode(bytes) ?? .corrupt("no decoder for the negotiated format")
    }

    /// Lends the image buffer the last uncompressed frame was converted into (`FrameBufferLending`).
    ///
    /// Only Shutter's own conversions lend (`V4L2FrameDecoder`); libv4lconvert's frames are
    /// limited range, which the encoder expands into a buffer of its own anyway, so the capture
    /// loop never asks for them.
    public func lendFrameBuffer() -> Bool {
        session?.decoder?.lendCanvas() ?? false
    }

    /// Takes back a buffer lent by `lendFrameBuffer()` for the next frames; after a restart or
    /// a new size it no longer fits, and is dropped.
    public func returnFrameBuffer(_ image: consuming YUVImage) {
        session?.decoder?.takeBackCanvas(image)
    }

    /// The capture time of a buffer: its own timestamp when the driver took it on CLOCK_MONOTONIC
    /// (buffer.rst, V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC; uvcvideo stamps the start of exposure),
    /// else `now`. A zero timestamp, or one after `now`, cannot be a capture time on the same
    /// clock and is replaced by `now` too.
    static func captureInstant(timestampNanoseconds: UInt64, flags: UInt32, now: MonotonicInstant)
        -> MonotonicInstant
    {
        let mask = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MASK)
        let monotonic = UInt32(V4L2_BUF_FLAG_TIMESTAMP_MONOTONIC)
        guard flags & mask == monotonic, timestampNanoseconds > 0, timestampNanoseconds <= now.nanoseconds
        else {
            return now
        }
        return MonotonicInstant(nanoseconds: timestampNanoseconds)
    }

    /// How long `nextFrame` waits: five frame intervals, but at least a second (a camera may
    /// lengthen its exposure, and so its interval, in the dark).
    static func frameTimeoutNanoseconds(fps: Double?) -> UInt64 {
        let second: UInt64 = 1_000_000_000
        guard let fps, fps > 0 else { return second }
        return max(second, UInt64(5 * Double(second) / fps))
    }

    // MARK: - Lifetime

    private func withDevice<Result>(_ body: (V4L2Device) throws -> Result) throws -> Result {
        if let session { return try body(session.device) }
        let device = try V4L2Device.open(path)
        defer { device.close() }
        return try body(device)
    }

    private static func release(_ session: Session) {
        release(device: session.device, buffers: session.buffers, converter: session.converter)
    }

    /// Undoes `start` in the order the kernel needs: STREAMOFF, munmap, then REQBUFS 0 (vb2
    /// refuses to free buffers that are still mapped, vidioc-reqbufs.rst), then the converter,
    /// then close. Errors are ignored: the device may already be gone, and closing releases
    /// everything anyway.
    private static func release(
        device: V4L2Device, buffers: [UnsafeMutableRawBufferPointer], converter: V4LConverter? = nil
    ) {
        try? device.streamOff()
        buffers.forEach(V4L2Device.unmapBuffer)
        if !buffers.isEmpty { _ = try? device.requestBuffers(count: 0) }
        converter?.close()
        device.close()
    }
}
