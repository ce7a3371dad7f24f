import ShutterCatalog
import ShutterHTTP
import ShutterSystem

extension ShutterAPI {
    /// `POST /snap`: stores a picture from a frame captured after the request arrived; with a
    /// `delay`, schedules a delayed job instead (see `delayedSnap`).
    func snap(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrived = clock.monotonicNow()
        let options = try SnapOptions(request)
        if let delay = options.delaySeconds {
            return try await delayedSnap(delaySeconds: delay, wait: options.wait)
        }
        let frame: EncodedFrame
        if let maxAge = options.maxAgeMilliseconds {
            do {
                frame = try await capture.recentFrame(
                    maxAgeNanoseconds: UInt64(maxAge) * 1_000_000, now: arrived,
                    timeoutMilliseconds: configuration.snapTimeoutMilliseconds, orNoSignal: false)
            } catch let error as CaptureError {
                throw cameraUnavailable(error)
            }
        } else {
            frame = try await freshFrame(capturedAtOrAfter: arrived)
        }
        let framed = clock.monotonicNow()
        let record = try await store(frame)
        let stored = clock.monotonicNow()
        return .json(
            .created, record.json,
            headers: [
                "Location": "/library/\(record.id)",
                // Where the time went, for clients and the snap benchmark (W3C Server Timing).
                "Server-Timing":
                    "wait;dur=\(milliseconds(framed.nanoseconds(since: arrived).subtractingReportingOverflow(frame.encodeNanoseconds).partialValue)), encode;dur=\(milliseconds(frame.encodeNanoseconds)), store;dur=\(milliseconds(stored.nanoseconds(since: framed)))",
            ])
    }

    /// `GET /preview.jpg`: the newest frame (at most one frame interval old), not stored;
    /// with `fresh=true`, the first frame captured after the request, so a client fetching in a
    /// loop gets each frame once instead of the same one again.
    func preview(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrived = clock.monotonicNow()
        let query = try QueryParameters(request, allowed: ["fresh"])
        let interval = UInt64(1_000_000_000 / max(1, capture.status.mode.fps))
        let frame: EncodedFrame
        do {
            if try query.boolean("fresh") == true {
                frame = try await capture.frame(
                    capturedAtOrAfter: arrived, timeoutMilliseconds: configuration.snapTimeoutMilliseconds)
            } else {
                frame = try await capture.recentFrame(
                    maxAgeNanoseconds: interval, now: arrived,
                    timeoutMilliseconds: configuration.snapTimeoutMilliseconds)
            }
        } catch let error as CaptureError {
            throw cameraUnavailable(error)
        }
        return HTTPResponse(
            status: .ok,
            headers: [
                "Content-Type": "image/jpeg", "Cache-Control": "no-store",
                "X-Frame-Sequence": String(frame.sequence),
                "X-Frame-Time": Timestamp.iso8601(millisecondsSince1970: frame.wallMilliseconds),
            ],
            body: .bytes(frame.jpeg))
    }

    func freshFrame(capturedAtOrAfter instant: MonotonicInstant) async throws -> EncodedFrame {
        do {
            return try await capture.frame(
                capturedAtOrAfter: instant, timeoutMilliseconds: configuration.snapTimeoutMilliseconds)
        } catch let error as CaptureError {
            throw cameraUnavailable(error)
        }
    }

    func store(_ frame: EncodedFrame) async throws -> MediaRecord {
        do {
            return try await catalog.add(
                jpeg: frame.jpeg, takenAt: frame.wallMilliseconds, width: frame.width, height: frame.height,
                source: capture.cameraName)
        } catch CatalogError.storageFull(let error) {
            throw HTTPError(
                .insufficientStorage, "storage full",
                detail: "the picture could not be stored: \(error.reason); nothing stored before was affected"
            )
        }
    }

    private func cameraUnavailable(_ error: CaptureError) -> HTTPError {
        HTTPError(
            .serviceUnavailable, "camera unavailable", detail: CaptureService.describe(error),
            headers: ["Retry-After": "1"])
    }

    private func milliseconds(_ nanoseconds: UInt64) -> String {
        Timestamp.thousandths(nanoseconds / 1000)
    }
}

extension ShutterAPI {
    /// `GET /preview.mjpg`: the live picture as `multipart/x-mixed-replace` MJPEG, every frame
    /// encoded once for all viewers; `fps` caps this viewer's rate, `width` asks for a smaller size.
    ///
    /// Browsers get each part's headers in advance, right after the previous frame, so that
    /// Chromium shows every frame when it arrives rather than one frame late; other clients
    /// get `Content-Length` in every part. Browsers are recognised by the `Sec-Fetch-Dest` they
    /// send for an image or a page (fetch metadata); `advance_headers` overrides it.
    func previewStream(_ request: HTTPRequest) throws -> HTTPResponse {
        let query = try QueryParameters(request, allowed: ["fps", "width", "advance_headers"])
        let framesPerSecond = try query.number("fps", in: 0.1...120)
        let width = try query.integer("width", in: Self.thumbnailWidths).map(Int.init)
        let destination = request.headers["Sec-Fetch-Dest"]?.lowercased() ?? ""
        let advanceHeaders =
            try query.boolean("advance_headers")
            ?? ["image", "document", "iframe", "embed", "object"].contains(destination)
        let viewer = preview.makeViewer(
            framesPerSecond: framesPerSecond, width: width, advanceHeaders: advanceHeaders)
        return HTTPResponse(
            status: .ok,
            headers: [
                "Content-Type": LivePreview.contentType,
                "Cache-Control": "no-store, no-cache, must-revalidate, max-age=0",
                "Pragma": "no-cache",
                // Stops buffering reverse proxies (nginx) from holding frames back.
                "X-Accel-Buffering": "no",
            ],
            body: .stream(viewer))
    }
}
