import ShutterCapture
import ShutterHTTP
import ShutterSystem

/// One frame as a part of the `multipart/x-mixed-replace` stream: built once per frame and size,
/// shared by all viewers of that size.
public final class PreviewPart: LivePreviewPart {
    /// The part's header fields and the blank line.
    let head: [UInt8]
    let jpeg: [UInt8]
    public let capturedAt: MonotonicInstant

    public init(_ frame: EncodedFrame) {
        jpeg = frame.jpeg
        capturedAt = frame.capturedAt
        // Built from bytes, not string interpolation: it runs on the event loop for every frame.
        var head = Self.contentLengthField
        head.reserveCapacity(128)
        JSONBytes.appendDecimal(UInt64(frame.jpeg.count), to: &head)
        // X-Timestamp: capture time in Unix seconds, as ustreamer sends it.
        head += Self.timestampField
        let milliseconds = UInt64(max(0, frame.wallMilliseconds))
        JSONBytes.appendDecimal(milliseconds / 1000, to: &head)
        head.append(UInt8(ascii: "."))
        JSONBytes.appendDecimal(milliseconds % 1000, to: &head, minimumDigits: 3)
        head += Self.sequenceField
        JSONBytes.appendDecimal(frame.sequence, to: &head)
        head += Self.endOfHead
        self.head = head
    }

    private static let contentLengthField = Array("Content-Type: image/jpeg\r\nContent-Length: ".utf8)
    private static let timestampField = Array("\r\nX-Timestamp: ".utf8)
    private static let sequenceField = Array("\r\nX-Frame-Sequence: ".utf8)
    private static let endOfHead = Array("\r\n\r\n".utf8)
}

/// One `/preview.mjpg` response: the body its connection pulls parts from, in MJPEG framing.
///
/// Which frame goes out when is the preview's business (`LivePreviewViewer`: one slot, the fps
/// cap); this only turns the part in the slot into bytes when the socket has room.
final class PreviewStream: HTTPBodyStream, @unchecked Sendable {
    // @unchecked Sendable: made by the handler on the loop thread and used only there.

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

    /// About one frame of backlog in the kernel at most: a viewer that reads slowly skips to the
    /// newest frame instead of receiving ones that waited seconds in a send buffer.
    static let unsentByteLimit = 32 * 1024

    private let preview: LivePreview<PreviewPart>
    private let viewer: LivePreviewViewer<PreviewPart>
    private let advanceHeaders: Bool
    let stallTimeoutMilliseconds: Int?
    /// The Unix second after which the stream ends (the signed link it was opened with
    /// expires), or nil; read on `clock`.
    private let expiresAt: Int64?
    private let clock: any Clock
    private var writer: HTTPStreamWriter?
    private var preambleSent = false

    /// `advanceHeaders` sends each part's headers right after the previous frame, without
    /// `Content-Length` (see `PreviewStream.advanceHeaders`). With `expiresAt`, no frame is
    /// sent after that Unix second: a link grants the preview until it expires, not for as long
    /// as a viewer opened before then stays.
    init(
        preview: LivePreview<PreviewPart>, viewer: LivePreviewViewer<PreviewPart>, advanceHeaders: Bool,
        stallTimeoutMilliseconds: Int, expiresAt: Int64? = nil, clock: any Clock = SystemClock()
    ) {
        self.preview = preview
        self.viewer = viewer
        self.advanceHeaders = advanceHeaders
        self.stallTimeoutMilliseconds = stallTimeoutMilliseconds
        self.expiresAt = expiresAt
        self.clock = clock
    }

    var unsentByteLimit: Int? { Self.unsentByteLimit }

    func start(_ writer: HTTPStreamWriter) {
        self.writer = writer
        viewer.onPart = { [weak writer] in writer?.wake() }
        preview.add(viewer)
    }

    func stop() {
        guard let writer else { return }
        assert(writer.loop.inEventLoop)
        self.writer = nil
        viewer.clear()
        preview.remove(viewer)
    }

    func nextOutput() -> HTTPStreamOutput {
        if !preambleSent {
            preambleSent = true
            return .chunks(advanceHeaders ? [Self.preamble, Self.advanceHeaders] : [Self.preamble])
        }
        guard let part = viewer.take() else { return .waiting }
        // Checked as each frame is due, which a live camera makes often; a stalled one sends nothing anyway.
        if let expiresAt, clock.wallMillisecondsNow() / 1000 > expiresAt { return .finished }
        if advanceHeaders { return .chunks([part.jpeg, Self.partEndWithAdvanceHeaders]) }
        return .chunks([part.head, part.jpeg, Self.partEnd])
    }
}
