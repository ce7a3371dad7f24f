import ShutterAccess
import ShutterCamera
import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterJobRunner
import ShutterSystem
import ShutterTestSupport

@testable import ShutterAPI

/// The real API over real services in `directory`, on a manual clock, with a capture service that
/// is never started, jobs that take their shots from a `FakeJobCamera`, and the event loop played
/// by hand: for asking the router and its handlers directly.
struct TestAPI {
    static let quiet = Logger(label: "test", level: .critical)
    let api: ShutterAPI
    let router: Router
    let catalog: MediaCatalog
    let jobs: JobService
    let jobCamera: FakeJobCamera
    let clock = ManualClock()
    /// The event loop the change feed's hub hops onto, run by hand.
    let loop = ManualSerialQueue()
    let events: EventHub

    init(
        directory: String, minimumFreeBytes: Int64 = 0, logSink: (any Logger.Sink)? = nil,
        maxPendingSnaps: Int = 64
    ) throws {
        let clock = self.clock
        let capture = try CaptureService(
            source: FakeCameraSource(), quality: 80, clock: clock, logger: Self.quiet)
        catalog = try MediaCatalog(
            dataDirectory: directory, logger: Self.quiet, minimumFreeBytes: minimumFreeBytes, clock: clock)
        jobCamera = FakeJobCamera(clock: clock)
        jobs = JobService(
            camera: jobCamera, catalog: catalog, clock: clock, limits: .init(), frameTimeoutMilliseconds: 100,
            logger: Self.quiet)
        events = EventHub(catalog: catalog, queue: loop, clock: clock, logger: Self.quiet)
        api = ShutterAPI(
            capture: capture, catalog: catalog, jobs: jobs,
            preview: LivePreview(
                capture: capture, quality: 80, queue: ManualSerialQueue(), clock: clock, logger: Self.quiet),
            discovery: try DeviceDiscovery(logger: Self.quiet), events: events,
            settings: .init(
                snapTimeoutMilliseconds: 100, previewStallTimeoutMilliseconds: 1000, cameraPath: nil,
                version: "9.9.9", links: SignedLinks(key: Array(repeating: 3, count: 32)),
                maxPendingSnaps: maxPendingSnaps),
            clock: clock, logger: logSink.map { Logger(label: "test", level: .info, sink: $0) } ?? Self.quiet)
        router = api.router()
    }

    /// The answer of the handler routed for `method` and `target`, run as the server would run it.
    func respond(
        _ method: HTTPMethod, _ target: String, headers: HTTPHeaders = [:], body: [UInt8] = [],
        peer: PeerAddress? = nil
    ) async -> HTTPResponse {
        let request = HTTPRequest(method: method, target: target, headers: headers, body: body, peer: peer)
        guard
            case .handler(let handler, let parameters, _, _) = router.resolve(
                method: method, path: request.path ?? "")
        else { return HTTPResponse(status: .notFound) }
        do {
            switch handler {
            case .immediate(let run): return try run(request, parameters)
            case .task(let run): return try await run(request, parameters)
            case .immediateOrTask(let immediate, let task):
                if let answer = try immediate(request, parameters) { return answer }
                return try await task(request, parameters)
            case .immediateOrDeferred(let immediate, let deferred):
                if let answer = try immediate(request, parameters) { return answer }
                return try await withCheckedThrowingContinuation { continuation in
                    let responder = HTTPResponder(
                        deliver: { continuation.resume(returning: $0) },
                        mapError: {
                            ($0 as? any HTTPResponseError)?.response()
                                ?? HTTPResponse(status: .internalServerError)
                        })
                    do {
                        try deferred(request, parameters, responder)
                    } catch {
                        responder.fail(error)
                    }
                }
            }
        } catch let error as any HTTPResponseError {
            return error.response()
        } catch {
            return HTTPResponse(status: .internalServerError)
        }
    }
}

extension HTTPResponse {
    /// The body as text (empty unless it is in memory).
    var text: String {
        guard case .bytes(let bytes) = body else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }
}
