import ShutterCamera
import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// The HTTP API: each endpoint is a method on this value, wired up by `router()`.
public struct ShutterAPI: Sendable {
    let capture: CaptureService
    let catalog: MediaCatalog
    let configuration: ShutterConfiguration
    let clock: SystemClock
    let startedAt: MonotonicInstant
    let logger: Logger
    /// The daemon's version, shown by `/status` and `--version`.
    public static let version = "0.1.0"

    public init(
        capture: CaptureService, catalog: MediaCatalog, configuration: ShutterConfiguration, logger: Logger
    ) {
        self.capture = capture
        self.catalog = catalog
        self.configuration = configuration
        self.clock = SystemClock()
        self.startedAt = clock.monotonicNow()
        self.logger = logger
    }

    /// Every endpoint.
    public func router() -> Router {
        var router = Router()
        router.add(.get, "/", .immediate { request, _ in try index(request) })
        router.add(.post, "/snap", .task { request, _ in try await snap(request) })
        router.add(.get, "/library", .task { request, _ in try await library(request) })
        router.add(
            .get, "/library/{id}", .task { request, parameters in try await picture(request, parameters) })
        router.add(
            .delete, "/library/{id}",
            .task { request, parameters in try await deletePicture(request, parameters) })
        router.add(
            .get, "/media/{id}.jpg", .immediate { request, parameters in try media(request, parameters) })
        router.add(.get, "/preview.jpg", .task { request, _ in try await preview(request) })
        router.add(.get, "/healthz", .immediate { request, _ in try health(request) })
        router.add(.get, "/status", .task { request, _ in try await status(request) })
        return router
    }

    /// `GET /`: what this server offers (the web page arrives with the live preview).
    func index(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        var object = JSONObjectWriter()
        object.field("service", "shutterd")
        object.field("version", Self.version)
        object.rawField(
            "endpoints",
            #"["POST /snap","GET /library","GET /library/{id}","DELETE /library/{id}","GET /media/{id}.jpg","GET /preview.jpg","GET /healthz","GET /status"]"#
        )
        return .json(.ok, object.finished())
    }
}
