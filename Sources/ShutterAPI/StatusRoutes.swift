import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterOutbox
import ShutterSystem

/// `/healthz` and `/status`: whether the daemon is well, and what it is doing.
struct StatusRoutes: Sendable {
    let capture: CaptureService
    let catalog: MediaCatalog
    let preview: LivePreview<PreviewPart>
    let clock: any Clock
    let startedAt: MonotonicInstant
    let cameraPath: String?
    let version: String
    /// Whether the server speaks HTTPS.
    let tls: Bool
    /// The outbox's sinks.
    let outbox: [OutboxDispatcher]

    func register(in router: inout Router) {
        router.add(.get, "/healthz", scope: .none, .immediate { request, _ in try health(request) })
        router.add(.get, "/status", scope: .view, .task { request, _ in try await status(request) })
    }

    /// `GET /healthz`: 200 while frames flow and pictures can be stored; 503 with the reason
    /// when the camera fails or snaps are refused for space.
    func health(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        var object = JSONObjectWriter()
        if let failure = capture.status.failure {
            object.field("status", "degraded")
            object.field("reason", failure.description)
            return .json(.serviceUnavailable, object.finished(), headers: ["Cache-Control": "no-store"])
        }
        if let shortage = catalog.spaceShortage() {
            object.field("status", "degraded")
            object.field("reason", "storage full: snaps are refused with 507: \(shortage)")
            return .json(.serviceUnavailable, object.finished(), headers: ["Cache-Control": "no-store"])
        }
        object.field("status", "ok")
        return .json(.ok, object.finished(), headers: ["Cache-Control": "no-store"])
    }

    /// The most viewers `/status` lists one by one (the oldest first); the counts cover all.
    static let maximumListedViewers = 100

    /// `GET /status`: camera, counters, catalog size, uptime and version.
    func status(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        let camera = capture.status
        let statistics = try await catalog.statistics()
        var cameraObject = JSONObjectWriter()
        cameraObject.field("name", camera.name)
        cameraObject.field("width", camera.mode.width)
        cameraObject.field("height", camera.mode.height)
        cameraObject.field("fps", camera.mode.fps)
        cameraObject.field("format", camera.pixelFormat)
        cameraObject.field("frames_captured", camera.framesCaptured)
        cameraObject.field("frames_encoded", camera.framesEncoded)
        cameraObject.field("reopens", camera.reopens)
        cameraObject.field("corrupt_frames", camera.corruptFrames)
        cameraObject.field("warmup_frames_dropped", camera.warmupFramesDropped)
        cameraObject.field("device", cameraPath)
        cameraObject.field("state", camera.failure != nil ? "failed" : camera.isIdle ? "idle" : "streaming")
        cameraObject.field("failure", camera.failure?.description)
        var libraryObject = JSONObjectWriter()
        libraryObject.field("pictures", statistics.count)
        // Thumbnails take disk too: `bytes` is what the library takes, as retention counts it.
        libraryObject.field("bytes", statistics.totalBytes + statistics.thumbnailBytes)
        libraryObject.field("thumbnail_bytes", statistics.thumbnailBytes)
        libraryObject.field("newest_id", statistics.newestID)
        let previewStatistics = preview.statistics
        let now = clock.monotonicNow()
        var viewerItems: [String] = []
        // Bounded: every open web page polls this once a second, and a list of thousands of
        // viewers for each of thousands of pages would cost more than the viewers themselves.
        for viewer in previewStatistics.viewers.prefix(Self.maximumListedViewers) {
            var item = JSONObjectWriter()
            item.field("id", viewer.id)
            item.field("width", viewer.width.map(Int64.init))
            item.field("max_fps", viewer.maximumFramesPerSecond)
            item.field("frames_sent", viewer.framesSent)
            item.field("frames_skipped", viewer.framesSkipped)
            item.field("connected_s", Double(now.nanoseconds(since: viewer.connectedAt) / 1_000_000) / 1000)
            viewerItems.append(item.finished())
        }
        var previewObject = JSONObjectWriter()
        previewObject.field("viewers", previewStatistics.viewers.count)
        previewObject.field("frames_sent", previewStatistics.framesSent)
        previewObject.field("frames_skipped", previewStatistics.framesSkipped)
        previewObject.rawField("viewer_list", "[" + viewerItems.joined(separator: ",") + "]")
        previewObject.field(
            "viewer_list_truncated", previewStatistics.viewers.count > Self.maximumListedViewers)
        let renditionItems = preview.renditions.map { rendition in
            var item = JSONObjectWriter()
            item.field("width", rendition.width)
            item.field("frames_encoded", rendition.framesEncoded)
            return item.finished()
        }
        previewObject.rawField("renditions", "[" + renditionItems.joined(separator: ",") + "]")
        var object = JSONObjectWriter()
        object.field("version", version)
        object.field("tls", tls)
        object.field(
            "uptime_s", Double(clock.monotonicNow().nanoseconds(since: startedAt) / 1_000_000) / 1000)
        object.rawField("camera", cameraObject.finished())
        object.rawField("library", libraryObject.finished())
        object.rawField("preview", previewObject.finished())
        object.rawField("outbox", await outboxJSON())
        return .json(.ok, object.finished(), headers: ["Cache-Control": "no-store"])
    }

    /// The event history and each sink: connected, how far behind, what it delivered and lost.
    private func outboxJSON() async -> String {
        let history = await catalog.eventHistoryState()
        var object = JSONObjectWriter()
        object.field("events", history.count)
        object.field("latest_event_id", history.latestID)
        object.field("events_pruned", catalog.counters.eventsPrunedFromHistory)
        let sinks = outbox.map { dispatcher -> String in
            let status = dispatcher.status
            var sink = JSONObjectWriter()
            sink.field("name", status.name)
            sink.field("connected", status.connected)
            sink.field("cursor", status.cursor)
            sink.field("lag", status.lag)
            sink.field("delivered", status.delivered)
            sink.field("failures", status.failures)
            sink.field("dropped", status.dropped)
            sink.field("last_error", status.lastError)
            return sink.finished()
        }
        object.rawField("sinks", "[" + sinks.joined(separator: ",") + "]")
        return object.finished()
    }
}
