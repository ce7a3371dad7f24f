import CShutterLinux
import Dispatch
import ShutterAPI
import ShutterAccess
import ShutterCamera
import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterJobRunner
import ShutterJobs
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Assembles the daemon from its configuration and runs it until SIGTERM or SIGINT.
public final class ShutterDaemon {
    /// The daemon's version, shown by `--version`, `GET /`, `/status` and the `Server` header.
    public static let version = "0.1.0"

    private let configuration: ShutterConfiguration
    private let signalDescriptor: Int32
    private let logger: Logger

    /// `signalDescriptor` comes from `TerminationSignals.blockAndOpenDescriptor()`, called first in `main`.
    public init(configuration: ShutterConfiguration, signalDescriptor: Int32) {
        self.configuration = configuration
        self.signalDescriptor = signalDescriptor
        self.logger = Logger(label: "shutterd", level: configuration.logLevel)
    }

    /// Runs until a termination signal, then shuts down gracefully; returns the exit status.
    public func run() -> Int32 {
        do {
            return try runThrowing()
        } catch {
            logger.error("cannot start", ["error": String(describing: error)])
            return 1
        }
    }

    private func runThrowing() throws -> Int32 {
        raiseDescriptorLimit()
        // Services start bottom up (catalog, camera, jobs, loop and preview, API, server) and stop
        // in reverse order, whether the daemon ends by a signal or a later service fails to start.
        var stopInReverse: [() -> Void] = []
        defer { for stop in stopInReverse.reversed() { stop() } }

        let clock = SystemClock()
        // Checked before anything opens, so a refused setup starts nothing.
        let access = try AccessSetup(configuration: configuration, logger: logger)
        let catalog = try MediaCatalog(
            dataDirectory: configuration.dataDirectory, logger: logger.with("component", "catalog"),
            retention: configuration.retentionPolicy, minimumFreeBytes: Int64(configuration.minFreeBytes),
            clock: clock)
        let cameraPath = chooseCameraPath()
        let capture = try CaptureService(
            source: makeCameraSource(path: cameraPath, clock: clock), quality: configuration.quality,
            reopenIntervalMilliseconds: configuration.reopenIntervalMilliseconds,
            idleAfterMilliseconds: configuration.idleAfterSeconds * 1000,
            orientation: configuration.orientation, overlay: configuration.overlay.captureOverlay,
            clock: clock,
            software: "shutterd \(Self.version)", logger: logger.with("component", "capture"))
        try blockingAwait { try await capture.start() }
        stopInReverse.append { blockingAwait { await capture.stop() } }

        let jobs = JobService(
            camera: capture, catalog: catalog, clock: clock,
            limits: JobLimits(
                maxCount: configuration.maxJobShots, maxActiveJobs: configuration.maxActiveJobs),
            frameTimeoutMilliseconds: configuration.snapTimeoutMilliseconds,
            logger: logger.with("component", "jobs"))
        try blockingAwait { try await jobs.start() }
        stopInReverse.append { blockingAwait { await jobs.stop() } }

        let links = try SignedLinks.loadOrCreate(dataDirectory: configuration.dataDirectory)
        let loop = try EventLoop()
        let preview = LivePreview<PreviewPart>(
            capture: capture, quality: configuration.quality, queue: loop, clock: clock,
            logger: logger.with("component", "preview"))
        let api = ShutterAPI(
            capture: capture, catalog: catalog, jobs: jobs, preview: preview,
            discovery: try DeviceDiscovery(logger: logger.with("component", "discovery")),
            settings: ShutterAPI.Settings(
                snapTimeoutMilliseconds: configuration.snapTimeoutMilliseconds,
                previewStallTimeoutMilliseconds: configuration.previewStallTimeoutMilliseconds,
                cameraPath: cameraPath, version: Self.version, links: links),
            clock: clock, logger: logger)
        var httpConfiguration = configuration.http
        httpConfiguration.host = configuration.listenHost
        httpConfiguration.port = configuration.listenPort
        httpConfiguration.logRequests = configuration.accessLog
        httpConfiguration.serverName = "shutterd/\(Self.version)"
        let policy = AccessPolicy(
            settings: AccessPolicy.Settings(
                tokens: access.tokens, anonymous: access.anonymous, origins: access.origins, links: links),
            clock: clock, logger: logger.with("component", "access"))
        let server = HTTPServer(
            configuration: httpConfiguration, router: api.router(), policy: policy,
            logger: logger.with("component", "http"), loop: loop)
        try server.start()
        let signals = SignalWatcher(descriptor: signalDescriptor) { [logger] signal in
            logger.notice("shutting down", ["signal": String(signal)])
            server.shutdown { loop.stop() }
        }
        try loop.register(signalDescriptor, events: cshutter_epollin(), handler: signals)
        logger.notice(
            "access control",
            [
                "tokens": String(access.tokens.count), "token_file": access.tokenSource ?? "none",
                "anonymous": access.anonymous.description,
            ])
        logger.notice(
            "listening",
            [
                "address": "\(configuration.listenHost):\(server.boundPort)",
                "data_dir": configuration.dataDirectory,
                "version": Self.version,
            ])
        // Until SIGTERM or SIGINT has let every request in flight finish (the grace period).
        loop.run()
        // Logged once everything else has stopped.
        stopInReverse.insert({ [logger] in logger.notice("stopped") }, at: 0)
        return 0
    }

    /// Raises the soft descriptor limit to the hard one: each connection needs a socket and,
    /// while a picture is sent, its file; the common soft limit of 1024 is below what
    /// `max_connections` allows.
    private func raiseDescriptorLimit() {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let needed = UInt64(configuration.http.maxConnections) * 2 + 64
        if UInt64(limit.rlim_cur) < needed {
            logger.warning(
                "descriptor limit is low for max_connections",
                [
                    "limit": String(limit.rlim_cur),
                    "max_connections": String(configuration.http.maxConnections),
                ])
        }
    }

    /// The device path `camera` names (nil for the test pattern); `auto`
    /// takes the first V4L2 capture device and falls back to the test pattern, saying why.
    private func chooseCameraPath() -> String? {
        var path: String?
        switch configuration.camera {
        case "test-pattern":
            logger.notice("using the test pattern", ["camera": "test-pattern"])
        case "auto":
            if let device = V4L2Discovery.firstCaptureDevice(logger: logger) {
                logger.notice(
                    "using the first V4L2 capture device",
                    ["camera": "auto", "device": device.path, "card": device.card, "driver": device.driver])
                path = device.path
            } else {
                logger.notice(
                    "using the test pattern", ["camera": "auto", "reason": "no V4L2 capture device found"])
            }
        default:
            path = configuration.camera
        }
        return path
    }

    /// The source for `path`: a V4L2 camera, or the test pattern when nil.
    private func makeCameraSource(path: String?, clock: SystemClock) -> sending any CameraSource {
        let mode = CameraMode(
            width: configuration.width, height: configuration.height, fps: configuration.fps)
        guard let path else { return TestPatternSource(mode: mode, clock: clock) }
        let formats = configuration.cameraFormats.compactMap(PixelFormat.init(rawValue:))
        let source = V4L2CameraSource(
            path: path, requested: mode, formatPreference: formats,
            warmupMilliseconds: configuration.warmupMilliseconds, logger: logger.with("component", "camera"))
        return source
    }
}

/// Reads the signalfd on the event loop and reports each termination signal once.
private final class SignalWatcher: EventLoopHandler {
    let descriptor: Int32
    let onSignal: (Int32) -> Void
    private var handled = false

    init(descriptor: Int32, onSignal: @escaping (Int32) -> Void) {
        self.descriptor = descriptor
        self.onSignal = onSignal
    }

    func handleEvents(_ events: UInt32) {
        while let signal = TerminationSignals.read(descriptor) {
            // A second signal while draining changes nothing; the grace period bounds the wait.
            if !handled {
                handled = true
                onSignal(signal)
            }
        }
    }
}

/// Runs async work from synchronous start-up and shutdown code on the main thread.
private func blockingAwait<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
    let semaphore = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var result: Result<T, any Error>?
    Task {
        do { result = .success(try await body()) } catch { result = .failure(error) }
        semaphore.signal()
    }
    semaphore.wait()
    return try result!.get()
}

private func blockingAwait(_ body: @escaping @Sendable () async -> Void) {
    _ = try? blockingAwait { () async throws -> Bool in
        await body()
        return true
    }
}
