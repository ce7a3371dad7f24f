import ShutterAccess
import ShutterCamera
import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterJobRunner
import ShutterOutbox
import ShutterSystem

/// The HTTP API: the routes of every resource, over services the daemon has already built.
///
/// Each resource's handlers live in a `…Routes` value of their own file, holding only the
/// services it uses; `router()` puts them together.
public struct ShutterAPI: Sendable {
    /// What the handlers need to know besides the services.
    public struct Settings: Sendable {
        /// How long a snap or a preview waits for a frame before answering 503.
        public var snapTimeoutMilliseconds: Int
        /// A `/preview.mjpg` viewer that reads nothing for this long is disconnected.
        public var previewStallTimeoutMilliseconds: Int
        /// The V4L2 device in use, or nil for the test pattern (`/cameras` marks it).
        public var cameraPath: String?
        /// The daemon's version, shown by `GET /` and `/status`.
        public var version: String
        /// Signs the links `POST /links` makes; nil leaves that route out.
        public var links: SignedLinks?
        /// Whether the server speaks HTTPS, shown by `/status`.
        public var tls: Bool
        /// The server's request counts, shown by `/metrics` (nil: none are shown).
        public var httpMetrics: HTTPMetrics?
        /// The outbox's sinks, shown by `/status`.
        public var outbox: [OutboxDispatcher]
        /// Where an offloaded picture is fetched from (a presigned S3 URL); nil: no offload.
        public var remoteMediaURL: (@Sendable (MediaRecord) -> String?)?
        /// `POST /snap` requests in progress at once; more are answered 503.
        public var maxPendingSnaps: Int

        public init(
            snapTimeoutMilliseconds: Int, previewStallTimeoutMilliseconds: Int, cameraPath: String?,
            version: String, links: SignedLinks? = nil, tls: Bool = false, httpMetrics: HTTPMetrics? = nil,
            outbox: [OutboxDispatcher] = [], remoteMediaURL: (@Sendable (MediaRecord) -> String?)? = nil,
            maxPendingSnaps: Int = 64
        ) {
            self.maxPendingSnaps = maxPendingSnaps
            self.remoteMediaURL = remoteMediaURL
            self.httpMetrics = httpMetrics
            self.outbox = outbox
            self.links = links
            self.tls = tls
            self.snapTimeoutMilliseconds = snapTimeoutMilliseconds
            self.previewStallTimeoutMilliseconds = previewStallTimeoutMilliseconds
            self.cameraPath = cameraPath
            self.version = version
        }
    }

    let capture: CaptureService
    let catalog: MediaCatalog
    let jobs: JobService
    let preview: LivePreview<PreviewPart>
    let discovery: DeviceDiscovery
    /// The change feed: `/events` and the long-polls.
    let events: EventHub
    let settings: Settings
    let clock: any Clock
    let logger: Logger
    /// When the API was built, for `/status`'s uptime.
    let startedAt: MonotonicInstant
    /// How snaps ended, for `/metrics`.
    let snapResults = SnapResults()
    /// Snaps in progress, held to `settings.maxPendingSnaps`.
    let snapAdmission: SnapAdmission

    public init(
        capture: CaptureService, catalog: MediaCatalog, jobs: JobService, preview: LivePreview<PreviewPart>,
        discovery: DeviceDiscovery, events: EventHub, settings: Settings, clock: any Clock = SystemClock(),
        logger: Logger
    ) {
        self.events = events
        self.capture = capture
        self.catalog = catalog
        self.jobs = jobs
        self.preview = preview
        self.discovery = discovery
        self.settings = settings
        snapAdmission = SnapAdmission(limit: settings.maxPendingSnaps)
        self.clock = clock
        self.logger = logger
        self.startedAt = clock.monotonicNow()
    }

    /// Every endpoint.
    public func router() -> Router {
        var router = Router()
        let longPoll = LongPoll(waiters: events.waiters, clock: clock)
        let jobRoutes = JobRoutes(jobs: jobs, catalog: catalog, capture: capture, longPoll: longPoll)
        SnapRoutes(
            capture: capture, catalog: catalog, jobs: jobRoutes, clock: clock,
            snapTimeoutMilliseconds: settings.snapTimeoutMilliseconds, results: snapResults,
            admission: snapAdmission
        ).register(in: &router)
        MetricsRoutes(
            capture: capture, catalog: catalog, preview: preview, snaps: snapResults,
            http: settings.httpMetrics, clock: clock, startedAt: startedAt, version: settings.version
        ).register(in: &router)
        LibraryRoutes(catalog: catalog, longPoll: longPoll).register(in: &router)
        EventRoutes(hub: events).register(in: &router)
        MediaRoutes(catalog: catalog, remoteMediaURL: settings.remoteMediaURL).register(in: &router)
        PreviewRoutes(
            capture: capture, preview: preview, clock: clock,
            snapTimeoutMilliseconds: settings.snapTimeoutMilliseconds,
            stallTimeoutMilliseconds: settings.previewStallTimeoutMilliseconds
        ).register(in: &router)
        StatusRoutes(
            capture: capture, catalog: catalog, preview: preview, clock: clock, startedAt: startedAt,
            cameraPath: settings.cameraPath, version: settings.version, tls: settings.tls,
            outbox: settings.outbox
        ).register(in: &router)
        CameraRoutes(capture: capture, discovery: discovery, cameraPath: settings.cameraPath).register(
            in: &router)
        jobRoutes.register(in: &router)
        if let links = settings.links { LinkRoutes(links: links, clock: clock).register(in: &router) }
        OpenAPIRoute().register(in: &router)
        // Added last, so the index lists every other endpoint from the router itself.
        IndexRoute(endpoints: router.endpoints, version: settings.version).register(in: &router)
        return router
    }
}
