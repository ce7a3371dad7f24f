import FoundationEssentials
import ShutterCatalog
import ShutterOutbox
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The MQTT outbox sink: publishes pictures, jobs and the camera's state to a broker for Home
/// Assistant and other subscribers, announces the device by MQTT discovery, and takes snap and
/// interval-job commands from `…/snap/set` and `…/job/set`.
///
/// `deliver` returns once the broker acknowledged every QoS 1 publish of the event (PUBACK), so
/// the outbox moves its cursor only past what the broker holds.
public final class MQTTSink: OutboxSink {
    /// What the sink is told by the configuration.
    public struct Settings: Sendable {
        public var url: MQTTBrokerURL
        /// Shown in Home Assistant; the client id and the node id are made from it.
        public var name: String
        public var topics: MQTTTopics
        public var discoveryPrefix = "homeassistant"
        /// Whether to publish each new picture's JPEG, retained, on `…/picture/jpeg`.
        public var publishJPEG = true
        /// Pictures larger than this are not published as JPEG (their record still is).
        public var jpegMaximumBytes = 4_194_304
        /// The interval of a job started by a plain `ON`.
        public var jobEverySeconds: Double = 10
        public var softwareVersion: String

        public init(url: MQTTBrokerURL, name: String, topics: MQTTTopics, softwareVersion: String) {
            self.url = url
            self.name = name
            self.topics = topics
            self.softwareVersion = softwareVersion
        }
    }

    public let name = "mqtt"
    public let eventTypes: Set<CatalogEventType> = [
        .pictureCreated, .pictureUpdated, .pictureDeleted, .jobCreated, .jobUpdated, .jobEnded, .cameraState,
    ]
    private let settings: Settings
    private let remote: any CameraRemote
    private let mediaPath: @Sendable (Int64) -> String
    private let logger: Logger
    private let messages: MQTTEventMessages
    private let discovery: HomeAssistantDiscovery
    private let commands: MQTTCommandRunner
    private let clock: any Clock
    private let stateThrottle = LockedValue(LibraryStateThrottle())
    /// Set once in `init` (the client's callbacks need the sink, the sink the client).
    private nonisolated(unsafe) var client: MosquittoClient!

    /// Makes the client; nothing connects before `start()`.
    public init(
        settings: Settings, remote: any CameraRemote, mediaPath: @escaping @Sendable (Int64) -> String,
        clock: any Clock, logger: Logger
    ) throws {
        self.settings = settings
        self.remote = remote
        self.mediaPath = mediaPath
        self.logger = logger
        self.clock = clock
        self.messages = MQTTEventMessages(topics: settings.topics)
        self.commands = MQTTCommandRunner(
            topics: settings.topics, defaultEverySeconds: settings.jobEverySeconds, remote: remote,
            logger: logger)
        self.discovery = HomeAssistantDiscovery(
            topics: settings.topics, name: settings.name, discoveryPrefix: settings.discoveryPrefix,
            softwareVersion: settings.softwareVersion, publishesJPEG: settings.publishJPEG)
        let will = MQTTPublication(topic: settings.topics.availability, text: "offline", retain: true)
        client = try MosquittoClient(
            settings: MosquittoClient.Settings(
                url: settings.url, clientID: "shutterd-" + MQTTTopics.identifier(settings.name), will: will),
            clock: clock, logger: logger,
            onConnect: { [weak self] client in self?.announce(on: client) },
            onMessage: { [weak self] topic, payload in self?.received(topic: topic, payload: payload) })
    }

    public var isConnected: Bool { client.isConnected }

    /// Connects in the background; the sink retries for as long as it runs.
    public func start() throws {
        logger.notice(
            "MQTT sink starts", ["broker": settings.url.description, "topic_prefix": settings.topics.prefix])
        try client.start()
    }

    /// Says `offline`, disconnects and ends the network thread (blocks for at most a few seconds).
    public func stop() {
        client.stop(
            farewell: MQTTPublication(topic: settings.topics.availability, text: "offline", retain: true))
    }

    public func deliver(_ event: CatalogEvent) async throws {
        // Connected first, then read what the event needs: a picture deleted while the broker
        // was away is then found gone, not published from a read made before.
        try await client.awaitConnection()
        var context = MQTTEventMessages.Context()
        switch event.type {
        case .pictureCreated:
            if settings.publishJPEG { context.jpeg = readJPEG(of: event) }
            context.library = try await libraryStateIfDue()
        case .pictureDeleted:
            context.library = try await libraryStateIfDue()
        case .jobCreated, .jobUpdated, .jobEnded:
            context.intervalJobRunning = try await remote.intervalJobRunning()
        default:
            break
        }
        for publication in messages.publications(for: event, context: context) {
            try await client.publish(publication)
        }
    }

    /// The library's state when the throttle says it is due now; otherwise nil, and a publish of
    /// it scheduled for the end of the interval if none is yet.
    private func libraryStateIfDue() async throws -> MQTTLibraryState? {
        switch stateThrottle.withLock({ $0.changed(now: clock.monotonicNow()) }) {
        case .publishNow:
            return try await remote.libraryState()
        case .alreadyScheduled:
            return nil
        case .publishLater(let instant):
            Task { [weak self, clock] in
                try? await clock.sleep(until: instant)
                await self?.publishLibraryState()
            }
            return nil
        }
    }

    /// The trailing publish of the throttle: without waiting for the PUBACK (it is a retained
    /// state, and the next change publishes it again).
    private func publishLibraryState() async {
        stateThrottle.withLock { $0.trailingPublished(now: clock.monotonicNow()) }
        // Disconnected, it would wait in libmosquitto's queue; each connection publishes it anyway.
        guard client.isConnected else { return }
        do {
            let library = try await remote.libraryState()
            client.publishWithoutWaiting(
                MQTTPublication(
                    topic: settings.topics.state, text: MQTTEventMessages.stateMessage(library), retain: true)
            )
        } catch {
            logger.warning("could not publish the library's state", ["error": "\(error)"])
        }
    }

    // MARK: Each connection

    /// Runs on the network thread after each CONNACK: the broker may have restarted without its
    /// retained messages, so everything retained is published again.
    private func announce(on client: MosquittoClient) {
        client.publishWithoutWaiting(
            MQTTPublication(topic: settings.topics.availability, text: "online", retain: true))
        for config in discovery.configs { client.publishWithoutWaiting(config) }
        client.subscribe(settings.topics.snapCommand)
        client.subscribe(settings.topics.jobCommand)
        // The sensors' and the switch's state now, so Home Assistant shows them before the next event.
        Task { [remote, settings, logger] in
            do {
                let library = try await remote.libraryState()
                client.publishWithoutWaiting(
                    MQTTPublication(
                        topic: settings.topics.state, text: MQTTEventMessages.stateMessage(library),
                        retain: true))
                let running = try await remote.intervalJobRunning()
                client.publishWithoutWaiting(
                    MQTTPublication(
                        topic: settings.topics.jobState, text: running ? "ON" : "OFF", retain: true))
            } catch {
                logger.warning("could not publish the library's state", ["error": "\(error)"])
            }
        }
    }

    // MARK: Commands

    /// Runs on the network thread, which must keep reading the socket: the runner only parses
    /// and admits, and the command runs as a task.
    private func received(topic: String, payload: [UInt8]) {
        _ = commands.handle(topic: topic, payload: payload)
    }

    // MARK: Pictures

    /// The JPEG of the picture `event` announces, or nil when it is gone already (deleted or
    /// removed by retention since) or larger than the limit: its record is published anyway.
    private func readJPEG(of event: CatalogEvent) -> [UInt8]? {
        struct Identified: Decodable { var id: Int64 }
        guard let id = try? JSONDecoder().decode(Identified.self, from: Data(event.data.utf8)).id else {
            return nil
        }
        let path = mediaPath(id)
        // A local file of a few hundred KiB: read in one go, a matter of microseconds.
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            logger.debug("picture gone before its JPEG was published", ["picture_id": String(id)])
            return nil
        }
        defer { _ = close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_size <= settings.jpegMaximumBytes else {
            logger.info(
                "picture not published as JPEG: larger than mqtt_jpeg_max_bytes",
                ["picture_id": String(id), "bytes": String(info.st_size)])
            return nil
        }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes.withUnsafeMutableBytes {
                read(descriptor, $0.baseAddress! + filled, $0.count - filled)
            }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { return nil }
            filled += count
        }
        return bytes
    }
}
