import ShutterCapture
import ShutterHTTP
import ShutterSystem

/// `/preview.jpg` and `/preview.mjpg`: the live picture, not stored.
struct PreviewRoutes: Sendable {
    let capture: CaptureService
    let preview: LivePreview<PreviewPart>
    let clock: any Clock
    let snapTimeoutMilliseconds: Int
    let stallTimeoutMilliseconds: Int

    func register(in router: inout Router) {
        router.add(
            .get, "/preview.jpg", scope: .view,
            .immediateOrTask(
                immediate: { request, _ in try frameInHand(request) },
                task: { request, _ in try await previewFrame(request) }))
        router.add(
            .get, "/preview.mjpg", scope: .view, .immediate { request, _ in try previewStream(request) })
    }

    /// `GET /preview.jpg` on the loop, when the newest frame in hand answers it (the common case
    /// while the camera streams): no task, no thread woken. Nil when the request must wait, for
    /// `fresh=true` always: `previewFrame` then waits on a task.
    func frameInHand(_ request: HTTPRequest) throws -> HTTPResponse? {
        let query = try QueryParameters(request, allowed: ["fresh"])
        if try query.boolean("fresh") == true { return nil }
        return capture.newestFrameInHand(now: clock.monotonicNow()).map(Self.response)
    }

    /// `GET /preview.jpg`: the newest frame, answered at once while frames arrive at the camera's
    /// rate (`NewestFrameRule`), else the next one; with `fresh=true`, the first frame captured
    /// after the request, so a client fetching in a loop gets each frame once instead of the
    /// same one again.
    func previewFrame(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrived = clock.monotonicNow()
        let query = try QueryParameters(request, allowed: ["fresh"])
        let frame: EncodedFrame
        if try query.boolean("fresh") == true {
            frame = try await capture.frame(
                capturedAtOrAfter: arrived, timeoutMilliseconds: snapTimeoutMilliseconds)
        } else {
            frame = try await capture.newestFrame(now: arrived, timeoutMilliseconds: snapTimeoutMilliseconds)
        }
        return Self.response(frame)
    }

    private static func response(_ frame: EncodedFrame) -> HTTPResponse {
        HTTPResponse(
            status: .ok,
            headers: [
                "Content-Type": "image/jpeg", "Cache-Control": "no-store",
                "X-Frame-Sequence": String(frame.sequence),
                "X-Frame-Time": Timestamp.iso8601(millisecondsSince1970: frame.wallMilliseconds),
            ],
            body: .bytes(frame.jpeg))
    }

    /// `GET /preview.mjpg`: the live picture as `multipart/x-mixed-replace` MJPEG, every frame
    /// encoded once for all viewers; `fps` caps this viewer's rate, `width` asks for a smaller size.
    ///
    /// Browsers get each part's headers in advance, right after the previous frame, so that
    /// Chromium shows every frame when it arrives rather than one frame late; other clients
    /// get `Content-Length` in every part. Browsers are recognised by the `Sec-Fetch-Dest` they
    /// send for an image or a page (fetch metadata); `advance_headers` overrides it.
    ///
    /// Immediate (on the loop), because a stream must be answered before anything pipelined
    /// behind it is read.
    func previewStream(_ request: HTTPRequest) throws -> HTTPResponse {
        let query = try QueryParameters(request, allowed: ["fps", "width", "advance_headers"])
        let framesPerSecond = try query.number("fps", in: 0.1...120)
        let width = try query.integer("width", in: MediaRoutes.thumbnailWidths).map(Int.init)
        let destination = request.headers["Sec-Fetch-Dest"]?.lowercased() ?? ""
        let advanceHeaders =
            try query.boolean("advance_headers")
            ?? ["image", "document", "iframe", "embed", "object"].contains(destination)
        let stream = PreviewStream(
            preview: preview, viewer: preview.makeViewer(framesPerSecond: framesPerSecond, width: width),
            advanceHeaders: advanceHeaders, stallTimeoutMilliseconds: stallTimeoutMilliseconds,
            expiresAt: request.accessExpiresAt, clock: clock)
        return HTTPResponse(
            status: .ok,
            headers: [
                "Content-Type": PreviewStream.contentType,
                "Cache-Control": "no-store, no-cache, must-revalidate, max-age=0",
                "Pragma": "no-cache",
                // Stops buffering reverse proxies (nginx) from holding frames back.
                "X-Accel-Buffering": "no",
            ],
            body: .stream(stream))
    }
}
