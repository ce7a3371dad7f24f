import ShutterCamera
import ShutterCatalog
import ShutterHTTP
import ShutterJobs
import ShutterSystem

/// The HTTP API: each endpoint is a method on this value, wired up by `router()`.
public struct ShutterAPI: Sendable {
    let capture: CaptureService
    let catalog: MediaCatalog
    /// The V4L2 device in use, or nil for the test pattern.
    let cameraPath: String?
    let configuration: ShutterConfiguration
    let clock: SystemClock
    let startedAt: MonotonicInstant
    let logger: Logger
    /// The owner of every capture job; the daemon starts and stops it.
    public let jobs: JobService
    /// The `/preview.mjpg` viewers and the frames fanned out to them.
    let preview: LivePreview
    /// The daemon's version, shown by `/status` and `--version`.
    public static let version = "0.1.0"

    public init(
        capture: CaptureService, catalog: MediaCatalog, cameraPath: String?,
        configuration: ShutterConfiguration,
        logger: Logger
    ) {
        self.capture = capture
        self.catalog = catalog
        self.cameraPath = cameraPath
        self.configuration = configuration
        self.clock = SystemClock()
        self.startedAt = clock.monotonicNow()
        self.logger = logger
        self.jobs = JobService(
            capture: capture, catalog: catalog, clock: clock,
            limits: JobLimits(
                maxCount: configuration.maxJobShots, maxActiveJobs: configuration.maxActiveJobs),
            frameTimeoutMilliseconds: configuration.snapTimeoutMilliseconds,
            logger: logger.with("component", "jobs"))
        self.preview = LivePreview(
            capture: capture, quality: configuration.quality,
            stallTimeoutMilliseconds: configuration.previewStallTimeoutMilliseconds,
            logger: logger.with("component", "preview"))
    }

    /// Every endpoint.
    public func router() -> Router {
        var router = Router()
        router.add(.post, "/snap", .task { request, _ in try await snap(request) })
        router.add(.get, "/library", .task { request, _ in try await library(request) })
        router.add(
            .get, "/library/{id}", .task { request, parameters in try await picture(request, parameters) })
        router.add(
            .delete, "/library/{id}",
            .task { request, parameters in try await deletePicture(request, parameters) })
        router.add(
            .patch, "/library/{id}",
            .task { request, parameters in try await patchPicture(request, parameters) })
        router.add(
            .get, "/media/{id}.jpg",
            .immediateOrTask(
                immediate: { request, parameters in try media(request, parameters) },
                task: { request, parameters in try await thumbnail(request, parameters) }))
        router.add(.get, "/preview.jpg", .task { request, _ in try await preview(request) })
        router.add(.get, "/preview.mjpg", .immediate { request, _ in try previewStream(request) })
        router.add(.get, "/healthz", .immediate { request, _ in try health(request) })
        router.add(.get, "/status", .task { request, _ in try await status(request) })
        router.add(.get, "/cameras", .task { request, _ in try await cameras(request) })
        router.add(.get, "/camera/controls", .task { request, _ in try await controls(request) })
        router.add(.patch, "/camera/controls", .task { request, _ in try await setControls(request) })
        router.add(.post, "/jobs", .task { request, _ in try await createJob(request) })
        router.add(.get, "/jobs", .task { request, _ in try await listJobs(request) })
        router.add(
            .get, "/jobs/{id}", .task { request, parameters in try await showJob(request, parameters) })
        router.add(
            .delete, "/jobs/{id}", .task { request, parameters in try await cancelJob(request, parameters) })
        // Added last, so the index lists every other endpoint from the router itself.
        let endpoints = router.endpoints
        router.add(.get, "/", .immediate { request, _ in try index(request, endpoints: endpoints) })
        return router
    }

    /// `GET /`: the web page for a browser (an `Accept` listing `text/html`), otherwise what
    /// this server offers as JSON, so curl and scripts keep getting the list of endpoints.
    func index(_ request: HTTPRequest, endpoints: [String]) throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        if WebPage.isWanted(by: request) { return WebPage.response(request) }
        var object = JSONObjectWriter()
        object.field("service", "shutterd")
        object.field("version", Self.version)
        object.rawField("endpoints", "[" + endpoints.map(JSONString.quote).joined(separator: ",") + "]")
        // Caches must not hand this to a browser that asked for the page, nor the page to curl.
        return .json(.ok, object.finished(), headers: ["Vary": "Accept"])
    }
}
