import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// `GET /metrics`: the daemon's counters in the Prometheus text format, cheap enough to scrape
/// every second (counters and gauges already kept; two catalog queries).
struct MetricsRoutes: Sendable {
    let capture: CaptureService
    let catalog: MediaCatalog
    let preview: LivePreview<PreviewPart>
    let snaps: SnapResults
    let http: HTTPMetrics?
    let clock: any Clock
    let startedAt: MonotonicInstant
    let version: String

    func register(in router: inout Router) {
        router.add(.get, "/metrics", scope: .view, .task { request, _ in try await metrics(request) })
    }

    func metrics(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        var text = PrometheusText()
        text.family("shutterd_build_info", "gauge", "The running version; always 1.")
        text.sample("shutterd_build_info", [("version", version)], 1.0)
        text.family("shutterd_uptime_seconds", "gauge", "Seconds since the daemon started.")
        text.sample(
            "shutterd_uptime_seconds", [],
            Double(clock.monotonicNow().nanoseconds(since: startedAt) / 1_000_000) / 1000)

        let camera = capture.status
        text.family(
            "shutterd_camera_up", "gauge",
            "1 while the camera delivers frames (or idles on purpose), 0 while it is gone.")
        text.sample("shutterd_camera_up", [("camera", camera.name)], camera.failure == nil ? 1.0 : 0.0)
        text.family("shutterd_camera_reopens_total", "counter", "Times the camera came back after failing.")
        text.sample("shutterd_camera_reopens_total", [], camera.reopens)
        text.family("shutterd_frames_captured_total", "counter", "Frames the camera delivered.")
        text.sample("shutterd_frames_captured_total", [], camera.framesCaptured)
        text.family(
            "shutterd_frames_encoded_total", "counter",
            "Frames encoded or passed through for someone who wanted them.")
        text.sample("shutterd_frames_encoded_total", [], camera.framesEncoded)
        text.family(
            "shutterd_frames_dropped_total", "counter",
            "Frames not used: damaged, or dropped while exposure settled.")
        text.sample("shutterd_frames_dropped_total", [("reason", "corrupt")], camera.corruptFrames)
        text.sample("shutterd_frames_dropped_total", [("reason", "warmup")], camera.warmupFramesDropped)
        text.family("shutterd_frame_encode_seconds", "histogram", "Time to encode one frame to JPEG.")
        text.histogram("shutterd_frame_encode_seconds", [], capture.encodeTime)

        text.family("shutterd_snaps_total", "counter", "POST /snap requests by how they ended.")
        for result in SnapResults.Result.allCases {
            text.sample("shutterd_snaps_total", [("result", result.rawValue)], snaps.count(of: result))
        }

        let statistics = try await catalog.statistics()
        let jobs = try await catalog.jobCountsByState()
        text.family("shutterd_pictures", "gauge", "Pictures in the library.")
        text.sample("shutterd_pictures", [], Double(statistics.count))
        text.family("shutterd_library_bytes", "gauge", "Bytes the library takes, by kind.")
        text.sample("shutterd_library_bytes", [("kind", "pictures")], Double(statistics.totalBytes))
        text.sample("shutterd_library_bytes", [("kind", "thumbnails")], Double(statistics.thumbnailBytes))
        text.family("shutterd_retention_removed_total", "counter", "Pictures retention removed since start.")
        text.sample("shutterd_retention_removed_total", [], catalog.counters.picturesRemovedByRetention)
        text.family("shutterd_disk_free_bytes", "gauge", "Bytes free for the library on its file system.")
        if let free = try? catalog.freeBytes() { text.sample("shutterd_disk_free_bytes", [], Double(free)) }
        text.family("shutterd_jobs", "gauge", "Jobs in the catalog by state.")
        for state in ["scheduled", "running", "done", "cancelled", "failed"] {
            text.sample("shutterd_jobs", [("state", state)], Double(jobs[state] ?? 0))
        }

        let previewStatistics = preview.statistics
        text.family("shutterd_preview_viewers", "gauge", "Clients watching /preview.mjpg.")
        text.sample("shutterd_preview_viewers", [], Double(previewStatistics.viewers.count))
        text.family("shutterd_preview_frames_sent_total", "counter", "Frames sent to preview viewers.")
        text.sample("shutterd_preview_frames_sent_total", [], previewStatistics.framesSent)
        text.family(
            "shutterd_preview_frames_skipped_total", "counter",
            "Frames a viewer skipped because it was still reading the one before.")
        text.sample("shutterd_preview_frames_skipped_total", [], previewStatistics.framesSkipped)

        http?.write(to: &text)
        return HTTPResponse(
            status: .ok,
            headers: [
                "Content-Type": "text/plain; version=0.0.4; charset=utf-8", "Cache-Control": "no-store",
            ],
            body: .bytes(Array(text.text.utf8)))
    }
}
