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
import ShutterOutbox
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Assembles the daemon from its configuration and runs it until SIGTERM or SIGINT; SIGHUP
/// reloads the TLS certificate and key.
public final class ShutterDaemon {
    /// The daemon's version, shown by `--version`, `GET /`, `/status` and the `Server` header.
    public static let version = "0.1.0"

    let configuration: ShutterConfiguration
    private let signalDescriptor: Int32
    /// The process's environment: systemd's `$NOTIFY_SOCKET` and `$WATCHDOG_USEC` are read here.
    let environment: [String: String]
    let logger: Logger

    /// `signalDescriptor` comes from `TerminationSignals.blockAndOpenDescriptor()`, called first in `main`.
    public init(
        configuration: ShutterConfiguration, signalDescriptor: Int32, environment: [String: String] = [:]
    ) {
        self.configuration = configuration
        self.signalDescriptor = signalDescriptor
        self.environment = environment
        let style = LogStyle(
            format: configuration.logFormat,
            journalPriorities: LogStyle.stderrIsJournal(environment: environment))
        StandardErrorSink.shared.style = style
        self.logger = Logger(label: "shutterd", level: configuration.logLevel, style: style)
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
        let maxConnections = raiseDescriptorLimit()
        // Loaded before anything starts: a missing, unreadable or mismatched file refuses to start.
        let tls = try loadTLSContext()
        // Services start bottom up (catalog, camera, jobs, loop and preview, API, server) and stop
        // in reverse order, whether the daemon ends by a signal or a later service fails to start.
        var stopInReverse: [() -> Void] = []
        defer { for stop in stopInReverse.reversed() { stop() } }

        let clock = SystemClock()
        // Checked before anything opens, so a refused setup starts nothing.
        // systemd's listening sockets, when it started us for them, replace `listen`.
        let activation = try SocketActivation(environment: environment)
        let access = try AccessSetup(
            configuration: configuration, listeners: activation?.addresses ?? configuration.listenAddresses,
            logger: logger)
        let catalog = try MediaCatalog(
            dataDirectory: configuration.dataDirectory, logger: logger.with("component", "catalog"),
            retention: configuration.retentionPolicy, minimumFreeBytes: Int64(configuration.minFreeBytes),
            eventHistoryLimits: configuration.eventHistoryLimits, clock: clock, checkMediaAtOpen: false)
        // What start-up spent in the catalog, step by step: with a large library that is most of it.
        logger.info("catalog opened", catalog.openTimings.fields)
        // Rows and files are compared while the daemon serves: a million files take seconds to list.
        try blockingAwait { try await catalog.startMediaCheck() }
        let cameraPath = chooseCameraPath()
        let capture = try CaptureService(
            source: makeCameraSource(path: cameraPath, clock: clock), quality: configuration.quality,
            reopenIntervalMilliseconds: configuration.reopenIntervalMilliseconds,
            idleAfterMilliseconds: configuration.idleAfterSeconds * 1000,
            orientation: configuration.orientation, overlay: configuration.overlay.captureOverlay,
            clock: clock,
            software: "shutterd \(Self.version)", logger: logger.with("component", "capture"))
        let cameraStates = recordCameraStates(capture, in: catalog)
        try blockingAwait { try await capture.start() }
        stopInReverse.append { blockingAwait { await capture.stop() } }
        stopInReverse.append { cameraStates.cancel() }

        let jobs = JobService(
            camera: capture, catalog: catalog, clock: clock,
            limits: JobLimits(
                maxCount: configuration.maxJobShots, maxActiveJobs: configuration.maxActiveJobs),
            frameTimeoutMilliseconds: configuration.snapTimeoutMilliseconds,
            logger: logger.with("component", "jobs"))
        try blockingAwait { try await jobs.start() }
        stopInReverse.append { blockingAwait { await jobs.stop() } }

        // Each sink drains the event history on its own; none can hold up the others or a snap.
        let outbox = try makeOutboxSinks(
            capture: capture, catalog: catalog, jobs: jobs, clock: clock, stopInReverse: &stopInReverse
        ).map {
            OutboxDispatcher(
                sink: $0, catalog: catalog, clock: clock, logger: logger.with("component", "outbox"))
        }
        for dispatcher in outbox { dispatcher.start() }
        stopInReverse.append { blockingAwait { for dispatcher in outbox { await dispatcher.stop() } } }

        let links = try SignedLinks.loadOrCreate(dataDirectory: configuration.dataDirectory)
        let loop = try EventLoop()
        let preview = LivePreview<PreviewPart>(
            capture: capture, quality: configuration.quality, queue: loop, clock: clock,
            logger: logger.with("component", "preview"))
        let httpMetrics = HTTPMetrics()
        let events = EventHub(
            catalog: catalog, queue: loop,
            settings: EventHub.Settings(
                maxEventStreams: configuration.maxEventStreams, maxWaiters: configuration.maxLongPolls,
                keepAliveMilliseconds: configuration.eventKeepAliveMilliseconds,
                stallTimeoutMilliseconds: configuration.previewStallTimeoutMilliseconds),
            clock: clock, logger: logger.with("component", "events"))
        blockingAwait { await events.start() }
        stopInReverse.append { events.stop() }
        // Keep-alives are due on the loop's tick; the hub looks at its streams only when one is.
        loop.addTickHandler { events.tick() }
        let api = ShutterAPI(
            capture: capture, catalog: catalog, jobs: jobs, preview: preview,
            discovery: try DeviceDiscovery(logger: logger.with("component", "discovery")), events: events,
            settings: ShutterAPI.Settings(
                snapTimeoutMilliseconds: configuration.snapTimeoutMilliseconds,
                previewStallTimeoutMilliseconds: configuration.previewStallTimeoutMilliseconds,
                cameraPath: cameraPath, version: Self.version, links: links, tls: tls != nil,
                httpMetrics: httpMetrics, outbox: outbox, remoteMediaURL: try remoteMediaURL(clock: clock),
                maxPendingSnaps: configuration.maxPendingSnaps),
            clock: clock, logger: logger)
        var httpConfiguration = configuration.http
        httpConfiguration.listeners = configuration.listenAddresses
        httpConfiguration.logRequests = configuration.accessLog
        httpConfiguration.collectMetrics = true
        httpConfiguration.serverName = "shutterd/\(Self.version)"
        httpConfiguration.maxConnections = maxConnections
        let policy = AccessPolicy(
            settings: AccessPolicy.Settings(
                tokens: access.tokens, anonymous: access.anonymous, origins: access.origins, links: links),
            clock: clock, logger: logger.with("component", "access"))
        let server = HTTPServer(
            configuration: httpConfiguration, router: api.router(), policy: policy,
            logger: logger.with("component", "http"), loop: loop, tls: tls, metrics: httpMetrics)
        try server.start(inherited: activation?.descriptors ?? [])
        let notifier = SystemdNotifier(environment: environment, logger: logger.with("component", "systemd"))
        if let notifier {
            notifySystemd(notifier, capture: capture, preview: preview, loop: loop, clock: clock)
        }
        let signals = SignalWatcher(
            descriptor: signalDescriptor,
            onTermination: { [logger] signal in
                notifier?.notify("STOPPING=1\nSTATUS=shutting down")
                logger.notice("shutting down", ["signal": String(signal)])
                // Long-polls answer what they have now rather than at the end of the grace period.
                events.endWaits()
                server.shutdown { loop.stop() }
            },
            onReload: { [self] in reloadTLSContext(server) })
        try loop.register(signalDescriptor, events: cshutter_epollin(), handler: signals)
        if let tls { logger.notice("TLS certificate", Self.describe(tls)) }
        logger.notice(
            "access control",
            [
                "tokens": String(access.tokens.count), "token_file": access.tokenSource ?? "none",
                "anonymous": access.anonymous.description,
            ])
        for address in server.boundAddresses {
            let secure = tls != nil && !address.hasPrefix("unix:")
            logger.notice(
                "listening",
                [
                    "address": address, "scheme": secure ? "https" : "http", "tls": secure ? "on" : "off",
                    "data_dir": configuration.dataDirectory, "version": Self.version,
                    "socket_activation": activation != nil ? "yes" : "no",
                ])
        }
        // Until SIGTERM or SIGINT has let every request in flight finish (the grace period).
        loop.run()
        // Logged once everything else has stopped.
        stopInReverse.insert({ [logger] in logger.notice("stopped") }, at: 0)
        return 0
    }

    /// The outbox sinks the configuration asks for (MQTT, webhooks, S3); none by default. Each
    /// is stopped after the dispatchers (appended before theirs to `stopInReverse`).
    private func makeOutboxSinks(
        capture: CaptureService, catalog: MediaCatalog, jobs: JobService, clock: SystemClock,
        stopInReverse: inout [() -> Void]
    ) throws -> [any OutboxSink] {
        var sinks: [any OutboxSink] = []
        if let mqtt = try makeMQTTSink(
            capture: capture, catalog: catalog, jobs: jobs, clock: clock, logger: logger)
        {
            sinks.append(mqtt)
            stopInReverse.append { mqtt.stop() }
        }
        sinks += try makeHTTPSinks(catalog: catalog, stopInReverse: &stopInReverse)
        return sinks
    }

    /// Records the camera's state changes as `camera.state` events, in the order they happened.
    ///
    /// The capture thread must not wait for the catalog, so each change is queued on a stream that
    /// one task drains; a task per change could record them out of order.
    private func recordCameraStates(_ capture: CaptureService, in catalog: MediaCatalog)
        -> CameraStateRecorder
    {
        let (changes, continuation) = AsyncStream.makeStream(
            of: (CapturePhase, CaptureError?).self, bufferingPolicy: .bufferingNewest(64))
        let subscription = capture.observePhases { phase, failure in continuation.yield((phase, failure)) }
        let task = Task { [logger] in
            var report = CameraStateReport()
            for await (phase, failure) in changes {
                guard let (state, reason) = report.next(phase, failure: failure) else { continue }
                var data = JSONObjectWriter()
                data.field("state", state.rawValue)
                data.field("reason", reason)
                do {
                    try await catalog.recordEvent(.cameraState, data: data.finished())
                } catch {
                    logger.warning(
                        "could not record the camera state", ["state": state.rawValue, "error": "\(error)"])
                }
            }
        }
        return CameraStateRecorder(subscription: subscription, continuation: continuation, task: task)
    }

    /// Tells systemd, on every tick of the loop, whether the daemon is ready, what it is doing,
    /// and (with `WatchdogSec=`) that the loop and the capture thread are alive.
    private func notifySystemd(
        _ notifier: SystemdNotifier, capture: CaptureService, preview: LivePreview<PreviewPart>,
        loop: EventLoop,
        clock: SystemClock
    ) {
        var notifications = ServiceNotifications(
            watchdogIntervalNanoseconds: notifier.watchdogIntervalNanoseconds)
        let logger = logger.with("component", "systemd")
        loop.addTickHandler {
            let status = capture.status
            let snapshot = ServiceNotifications.Snapshot(
                phase: status.phase, framesCaptured: status.framesCaptured, width: status.mode.width,
                height: status.mode.height, fps: status.mode.fps, viewers: preview.statistics.viewers.count,
                failure: status.failure?.description)
            let wasWithholding = notifications.isWithholdingWatchdog
            for message in notifications.messages(for: snapshot, now: clock.monotonicNow()) {
                notifier.notify(message)
            }
            if notifications.isWithholdingWatchdog && !wasWithholding {
                logger.error(
                    "the capture thread has made no progress for a watchdog interval; withholding WATCHDOG=1 so systemd restarts the daemon",
                    ["phase": "\(snapshot.phase)", "frames_captured": String(snapshot.framesCaptured)])
            }
        }
    }

    /// The certificate and key configured, loaded; nil when HTTPS is off.
    private func loadTLSContext() throws -> TLSContext? {
        guard let certificate = configuration.tlsCertificatePath, let key = configuration.tlsKeyPath else {
            return nil
        }
        return try TLSContext(certificatePath: certificate, keyPath: key)
    }

    /// Log metadata naming a certificate: its files, subject and expiry.
    private static func describe(_ context: TLSContext) -> [String: String] {
        [
            "tls_cert": context.certificatePath, "tls_key": context.keyPath, "subject": context.subject,
            "expires": context.expires,
        ]
    }

    /// SIGHUP: new connections get the certificate and key as the files hold them now; open
    /// connections keep theirs. A file that fails to load keeps the previous certificate.
    private func reloadTLSContext(_ server: HTTPServer) {
        let context: TLSContext?
        do {
            context = try loadTLSContext()
        } catch {
            logger.error(
                "TLS reload failed; still serving the previous certificate",
                ["error": String(describing: error)])
            return
        }
        guard let context else {
            logger.notice("SIGHUP: nothing to reload (no tls_cert and tls_key)")
            return
        }
        server.replaceTLSContext(context)
        logger.notice("TLS certificate reloaded", Self.describe(context))
    }

    /// Raises the soft descriptor limit to the hard one, and returns `max_connections` capped to
    /// what the limit allows (saying so in the log): each connection needs a socket and, while
    /// a picture is sent, its file, and the catalog, the camera and refused connections need
    /// some too. Past the limit `accept` fails with `EMFILE`, and every client waits; under the
    /// cap, an extra client gets a 503 at once.
    private func raiseDescriptorLimit() -> Int {
        let requested = configuration.http.maxConnections
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return requested }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
            // Read back: a failed raise leaves the old soft limit.
            _ = getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        let allowed = Self.connectionLimit(descriptorLimit: UInt64(limit.rlim_cur), requested: requested)
        if allowed < requested {
            logger.warning(
                "max_connections lowered to fit the descriptor limit (RLIMIT_NOFILE)",
                [
                    "descriptor_limit": String(limit.rlim_cur),
                    "max_connections_configured": String(requested),
                    "max_connections": String(allowed),
                ])
        }
        return allowed
    }

    /// The most connections `descriptorLimit` open descriptors leave room for: two each (the
    /// socket and a picture being sent) after 64 for the daemon's own files and 64 refused
    /// connections being drained; at least 1.
    static func connectionLimit(descriptorLimit: UInt64, requested: Int) -> Int {
        let headroom: UInt64 = 128
        let room = descriptorLimit > headroom ? (descriptorLimit - headroom) / 2 : 1
        return max(1, min(requested, Int(clamping: room)))
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

/// Reads the signalfd on the event loop: reports the first termination signal once, and every SIGHUP.
private final class SignalWatcher: EventLoopHandler {
    let descriptor: Int32
    let onTermination: (Int32) -> Void
    let onReload: () -> Void
    private var handled = false

    init(descriptor: Int32, onTermination: @escaping (Int32) -> Void, onReload: @escaping () -> Void) {
        self.descriptor = descriptor
        self.onTermination = onTermination
        self.onReload = onReload
    }

    func handleEvents(_ events: UInt32) {
        while let signal = TerminationSignals.read(descriptor) {
            if signal == SIGHUP {
                onReload()
                continue
            }
            // A second signal while draining changes nothing; the grace period bounds the wait.
            if !handled {
                handled = true
                onTermination(signal)
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

func blockingAwait(_ body: @escaping @Sendable () async -> Void) {
    _ = try? blockingAwait { () async throws -> Bool in
        await body()
        return true
    }
}

/// Ends the recording of camera states: no more changes are taken, and those queued are recorded.
struct CameraStateRecorder {
    let subscription: Broadcast<CapturePhase>.Subscription
    let continuation: AsyncStream<(CapturePhase, CaptureError?)>.Continuation
    let task: Task<Void, Never>

    func cancel() {
        subscription.cancel()
        continuation.finish()
        blockingAwait { await task.value }
    }
}
