import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A camera that needs no hardware: 75% colour bars with a moving square, a frame counter
/// and the UTC time, rendered straight into Y'CbCr 4:2:0.
///
/// Owned by one thread, like every `CameraSource`.
public final class TestPatternSource: CameraSource {
    /// Always `"test-pattern"`.
    public let name = "test-pattern"
    /// The requested mode; the pattern renders any even size from 64x48 to 8192x8192 at 1...1000 fps.
    public let mode: CameraMode

    private let clock: any Clock
    private let paced: Bool
    /// Ends a paced wait early (`interruptWait`); nothing else signals it.
    private let pacingWakeup = ThreadWakeup()
    private var session: Session?
    private var hasStopped = false

    /// What exists between `start` and `stop`.
    private final class Session {
        /// Where the parts go at this size.
        let layout: TestPatternLayout
        /// The bars and the empty strip, rendered once per `start`.
        let base: YUVImage
        /// Each frame is drawn here; once the consumer drops the previous frame the
        /// array is uniquely owned again and is overwritten in place.
        var canvas: YUVImage
        /// Due instants and skipping when paced.
        var pacer: FramePacer
        /// The last sequence number handed out when not paced.
        var unpacedSequence: UInt64 = 0

        init(layout: TestPatternLayout, base: YUVImage, pacer: FramePacer) {
            self.layout = layout
            self.base = base
            self.canvas = base
            self.pacer = pacer
        }
    }

    /// A source rendering `mode`; with `paced`, `nextFrame` sleeps until each frame is due, otherwise it returns at once.
    ///
    /// Pacing waits on `clock` (`Clock.wait(for:until:)`), so a paced source on a virtual clock
    /// delivers a frame each time the clock passes the next frame's due instant.
    public init(mode: CameraMode, clock: any Clock = SystemClock(), paced: Bool = true) {
        self.mode = mode
        self.clock = clock
        self.paced = paced
    }

    /// Checks the mode and renders the bars; calling it again while started does nothing.
    public func start() throws {
        guard session == nil else { return }
        let m = mode
        // Below 64x48 the strip under the bars has no room for the text line and the square.
        guard (64...8192).contains(m.width), (48...8192).contains(m.height) else {
            throw CameraError.unsupported(
                "test pattern size \(m.width)x\(m.height) is outside 64x48...8192x8192")
        }
        guard m.width % 2 == 0, m.height % 2 == 0 else {
            throw CameraError.unsupported("test pattern size \(m.width)x\(m.height) must be even for 4:2:0")
        }
        guard (1...1000).contains(m.fps) else {
            throw CameraError.unsupported("test pattern rate \(m.fps) fps is outside 1...1000")
        }
        let layout = TestPatternLayout(width: m.width, height: m.height)
        session = Session(
            layout: layout, base: Self.renderBase(layout: layout, width: m.width, height: m.height),
            pacer: FramePacer(start: clock.monotonicNow(), fps: m.fps))
        hasStopped = false
    }

    /// Releases the buffers; `nextFrame` throws `CameraError.stopped` until the next `start`.
    public func stop() {
        session = nil
        hasStopped = true
    }

    /// Ends a paced wait at once; the frame is then delivered early.
    public func interruptWait() {
        pacingWakeup.signal()
    }

    /// Renders the next frame, first sleeping until it is due when paced.
    public func nextFrame() throws -> RawFrame {
        guard let session else { throw hasStopped ? CameraError.stopped : CameraError.notStarted }
        let sequence: UInt64
        let capturedAt: MonotonicInstant
        if paced {
            let now = clock.monotonicNow()
            let (slot, due) = session.pacer.next(now: now)
            if due > now { _ = clock.wait(for: pacingWakeup, until: due) }
            sequence = slot + 1
            capturedAt = due
        } else {
            session.unpacedSequence += 1
            sequence = session.unpacedSequence
            capturedAt = clock.monotonicNow()
        }
        let wallMilliseconds = clock.wallMillisecondsNow()
        render(session, sequence: sequence, wallMilliseconds: wallMilliseconds)
        return RawFrame(
            sequence: sequence, capturedAt: capturedAt, wallMilliseconds: wallMilliseconds,
            image: .yuv(session.canvas), width: mode.width, height: mode.height)
    }

    /// Copies the base planes into the canvas, then draws the square and the text line.
    private func render(_ session: Session, sequence: UInt64, wallMilliseconds: Int64) {
        session.canvas.bytes.withUnsafeMutableBufferPointer { canvas in
            session.base.bytes.withUnsafeBufferPointer { base in
                canvas.baseAddress!.update(from: base.baseAddress!, count: base.count)
            }
        }
        let layout = session.layout
        let neutral = YUVImage.neutralChroma
        session.canvas.fill(
            x: layout.squareX(sequence: sequence), y: layout.squareY, width: layout.squareSide,
            height: layout.squareSide, luma: YUVImage.whiteLuma, cb: neutral, cr: neutral)
        let text =
            "#\(Self.zeroPadded(sequence, width: 6)) \(Timestamp.iso8601(millisecondsSince1970: wallMilliseconds))"
        BitmapFont.draw(
            text, into: &session.canvas, x: layout.textX, y: layout.textY, scale: layout.textScale)
    }

    /// The frame without its moving parts: the bars over a zone-plate strip.
    private static func renderBase(layout: TestPatternLayout, width: Int, height: Int) -> YUVImage {
        var image = YUVImage(width: width, height: height, subsampling: .yuv420)
        renderZonePlate(into: &image, fromRow: layout.barsHeight)
        for (index, color) in barColors.enumerated() {
            // Even edges keep each 2x2 chroma cell inside one bar.
            let left = (index * width / 8) & ~1
            let right = ((index + 1) * width / 8) & ~1
            image.fill(
                x: left, y: 0, width: right - left, height: layout.barsHeight, luma: color.y, cb: color.cb,
                cr: color.cr)
        }
        return image
    }

    /// A luma zone plate (concentric rings whose frequency rises with the radius) under the bars.
    ///
    /// Flat bars alone make unrealistically small, cheap JPEGs; the rings carry every spatial
    /// frequency up to Nyquist, so encode cost and file size resemble a detailed camera picture,
    /// and scaling or compression artefacts show at a glance.
    private static func renderZonePlate(into image: inout YUVImage, fromRow top: Int) {
        let width = image.width
        let height = image.height
        let centreX = Double(width) / 2
        let centreY = Double(top + height) / 2
        // Phase k r^2 reaches pi per pixel (Nyquist) at the strip's far corners.
        let maxRadiusSquared = centreX * centreX + (Double(height - top) / 2) * (Double(height - top) / 2)
        let k = Double.pi / (2 * maxRadiusSquared.squareRoot())
        image.bytes.withUnsafeMutableBufferPointer { bytes in
            for y in top..<height {
                let dy = Double(y) - centreY
                for x in 0..<width {
                    let dx = Double(x) - centreX
                    let phase = k * (dx * dx + dy * dy)
                    bytes[y * width + x] = UInt8(126 + 100 * cos(phase))
                }
            }
        }
    }

    /// The eight 75% bars in SMPTE/EBU order (white, yellow, cyan, green, magenta, red, blue,
    /// black) as BT.601 limited-range Y'CbCr.
    static let barColors: [(y: UInt8, cb: UInt8, cr: UInt8)] = {
        let rgb: [(r: Double, g: Double, b: Double)] = [
            (1, 1, 1), (1, 1, 0), (0, 1, 1), (0, 1, 0), (1, 0, 1), (1, 0, 0), (0, 0, 1), (0, 0, 0),
        ]
        return rgb.map { color in
            // 75% amplitude: each primary at 0.75 of full scale (ITU-R BT.1729 / EBU Tech 3325 bars).
            let (r, g, b) = (0.75 * color.r, 0.75 * color.g, 0.75 * color.b)
            // ITU-R BT.601-7 section 2.5: E'Y = 0.299 E'R + 0.587 E'G + 0.114 E'B,
            // E'Cb = (E'B - E'Y) / 1.772, E'Cr = (E'R - E'Y) / 1.402, quantised to 8 bits as
            // Y = 219 E'Y + 16 and Cb, Cr = 224 E'C + 128.
            let luma = 0.299 * r + 0.587 * g + 0.114 * b
            let cb = (b - luma) / 1.772
            let cr = (r - luma) / 1.402
            return (
                UInt8((219 * luma + 16).rounded()), UInt8((224 * cb + 128).rounded()),
                UInt8((224 * cr + 128).rounded())
            )
        }
    }()

    private static func zeroPadded(_ value: UInt64, width: Int) -> String {
        let digits = String(value)
        return digits.count >= width ? digits : String(repeating: "0", count: width - digits.count) + digits
    }
}

/// Where the parts of the test pattern go for one frame size: bars across the top two
/// thirds, then a black strip holding the text line and, under it, the moving square.
struct TestPatternLayout {
    /// Rows 0..<barsHeight hold the colour bars.
    let barsHeight: Int
    /// BitmapFont scale of the text line.
    let textScale: Int
    /// Left edge of the text box.
    let textX: Int
    /// Top edge of the text box.
    let textY: Int
    /// Side of the moving square.
    let squareSide: Int
    /// Top edge of the moving square.
    let squareY: Int
    /// How far the square moves per frame.
    let squareStep: Int
    /// The largest left edge the square reaches.
    let squareTravel: Int

    /// The layout for a `width` x `height` frame.
    init(width: Int, height: Int) {
        barsHeight = (height * 2 / 3) & ~1
        let strip = height - barsHeight
        // About 60% of the width for the 32-character line, but never taller than the strip allows.
        textScale = max(1, min(width / 320, strip / 30))
        let margin = 2 * textScale
        textX = margin
        textY = barsHeight + margin
        squareY = (textY + BitmapFont.size(of: "", scale: textScale).height + margin + 1) & ~1
        squareSide = max(2, min(height - squareY - margin, width / 8) & ~1)
        squareStep = max(2, (width / 128) & ~1)
        squareTravel = width - squareSide
    }

    /// The square's left edge in the frame with this sequence number: it steps right and wraps.
    func squareX(sequence: UInt64) -> Int {
        let positions = UInt64(squareTravel / squareStep + 1)
        return Int(sequence % positions) * squareStep
    }
}
