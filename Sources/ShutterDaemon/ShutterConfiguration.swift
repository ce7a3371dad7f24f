import ShutterCamera
import ShutterHTTP
import ShutterSystem

/// Everything `shutterd` can be told, with its default. Each field is one key in
/// `ConfigurationKey.all`, which the file, environment and flag readers share.
public struct ShutterConfiguration: Sendable, Equatable {
    /// Where to serve HTTP: TCP addresses and unix sockets.
    public var listenAddresses: [ListenAddress] = [.tcp(host: "127.0.0.1", port: 8080)]
    /// The first TCP address's host and port (the HTTP server's primary; tests read these).
    public var listenHost: String {
        for case .tcp(let host, _) in listenAddresses { return host }
        return "127.0.0.1"
    }
    public var listenPort: Int {
        for case .tcp(_, let port) in listenAddresses { return port }
        return 0
    }
    /// PEM certificate chain for HTTPS; nil serves plain HTTP. Always set together with `tlsKeyPath`.
    public var tlsCertificatePath: String?
    /// PEM private key of `tlsCertificatePath`.
    public var tlsKeyPath: String?
    public var dataDirectory = "shutter-data"
    public var camera = "auto"
    public var cameraFormats: [String] = ["mjpeg", "yuyv", "nv12", "yuv420"]
    public var warmupMilliseconds = 500
    public var reopenIntervalMilliseconds = 1000
    /// Seconds without anyone wanting a frame (and no job active) before the camera is closed; 0 never.
    public var idleAfterSeconds = 0
    public var width = 1280
    public var height = 720
    public var fps = 30
    public var quality = 85
    /// Degrees clockwise pictures and the preview are turned: 0, 90, 180 or 270.
    public var rotate = 0
    /// The mirror applied after `rotate`.
    public var flip = Orientation.Flip.none
    /// The burned-in text and how it looks (`overlay_*`).
    public var overlay = OverlaySettings()
    public var logLevel = Logger.Level.info
    /// `text` (`key=value`) or `json` (one object a line) log lines.
    public var logFormat = LogStyle.Format.text
    public var accessLog = true
    public var snapTimeoutMilliseconds = 3000
    /// `POST /snap` requests in progress at once (waiting for a frame or for storage).
    public var maxPendingSnaps = 64
    /// A `/preview.mjpg` viewer that reads nothing for this long is disconnected.
    public var previewStallTimeoutMilliseconds = 10_000
    /// Open `/events` streams at once (503 beyond).
    public var maxEventStreams = 1024
    /// Long-polls (`wait=`) waiting at once (503 beyond).
    public var maxLongPolls = 1024
    /// Silence on an `/events` stream after which a comment line is sent.
    public var eventKeepAliveMilliseconds = 15_000
    public var http = HTTPServerConfiguration()
    /// Jobs that may be scheduled or running at once.
    public var maxActiveJobs = 8
    /// The most shots one interval or burst job may ask for.
    public var maxJobShots = 10_000
    /// The most pictures retention leaves (0: no limit).
    public var retentionMaxPictures = 0
    /// The most bytes of pictures retention leaves (0: no limit).
    public var retentionMaxBytes = 0
    /// Pictures older than this many seconds are removed (0: no limit).
    public var retentionMaxAgeSeconds = 0
    /// Retention never removes a picture younger than this many seconds.
    public var retentionMinAgeSeconds = 60
    /// The free bytes a snap must leave on the disk (0: off).
    public var minFreeBytes = 67_108_864
    /// The most events the history (the replay window of `/events`, the outbox of the sinks) keeps.
    public var outboxMaxEvents = 100_000
    /// Events older than this many seconds leave the history (0: no age limit).
    public var outboxMaxAgeSeconds = 604_800
    /// Webhooks and S3 (`webhooks`, `webhook_url`, `s3_*`, `outbox_timeout_ms`).
    public var httpSinks = HTTPSinkSettings()
    /// The token file (`SCOPE TOKEN` lines); empty: none, unless systemd passed credentials.
    public var authTokensPath = ""
    /// What a request without credentials may do; nil: `admin` on loopback without tokens,
    /// `none` otherwise.
    public var anonymous: AccessScopeSetting = .automatic
    /// Names `Host` may carry besides IP literals and localhost.
    public var allowedHosts: [String] = []
    /// Origins allowed cross-origin access (CORS).
    public var corsOrigins: [String] = []
    /// Serve a non-loopback address without tokens (logged as a warning at every start).
    public var insecureNoAuth = false
    /// The daemon's name (Home Assistant's device, the MQTT topics); empty: the host name.
    public var name = ""
    /// The MQTT sink (`mqtt_*`); off without `mqtt_url`.
    public var mqtt = MQTTConfiguration()
    /// systemd's `$CREDENTIALS_DIRECTORY` (`LoadCredential=`), where a relative token file is found.
    public var credentialsDirectory: String?

    public init() {}
}

/// Why a configuration could not be used; the daemon prints it and exits 2.
public struct ConfigurationError: Error, CustomStringConvertible, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// One configuration key: its names in each source, what it means, and how to apply a value.
public struct ConfigurationKey: Sendable {
    /// The key in `config/shutterd.json`, such as `data_dir`.
    public let name: String
    /// What the value is, for `--help` (`HOST:PORT`, `MS`, ...).
    public let valueName: String
    /// One line for `--help` and the README, including the unit.
    public let help: String
    let apply: @Sendable (inout ShutterConfiguration, String) throws -> Void
    let current: @Sendable (ShutterConfiguration) -> String

    /// `--data-dir`
    public var flag: String { "--" + name.replacingUnderscores(with: "-") }
    /// `SHUTTERD_DATA_DIR`
    public var environmentVariable: String { "SHUTTERD_" + name.uppercased() }
}

extension String {
    fileprivate func replacingUnderscores(with replacement: Character) -> String {
        String(map { $0 == "_" ? replacement : $0 })
    }
}

extension ConfigurationKey {
    /// A whole-number key, refused with the same message everywhere when out of `range`.
    static func integer(
        _ name: String, _ valueName: String, _ help: String, range: ClosedRange<Int>,
        _ keyPath: WritableKeyPath<ShutterConfiguration, Int> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, valueName: valueName, help: help,
            apply: { config, text in
                guard let value = Int(text), range.contains(value) else {
                    throw ConfigurationError(
                        "\(name): '\(text)' is not a whole number from \(range.lowerBound) to \(range.upperBound)"
                    )
                }
                config[keyPath: keyPath] = value
            },
            current: { String($0[keyPath: keyPath]) })
    }

    static func boolean(
        _ name: String, _ help: String, _ keyPath: WritableKeyPath<ShutterConfiguration, Bool> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, valueName: "BOOL", help: help,
            apply: { config, text in
                switch text.lowercased() {
                case "true", "1", "yes", "on": config[keyPath: keyPath] = true
                case "false", "0", "no", "off": config[keyPath: keyPath] = false
                default: throw ConfigurationError("\(name): '\(text)' is not true or false")
                }
            },
            current: { String($0[keyPath: keyPath]) })
    }

    private static func optionalPath(
        _ name: String, _ help: String, _ keyPath: WritableKeyPath<ShutterConfiguration, String?> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, valueName: "FILE", help: help,
            // Empty unsets, so an environment variable can override a file's value.
            apply: { config, text in config[keyPath: keyPath] = text.isEmpty ? nil : text },
            current: { $0[keyPath: keyPath] ?? "none" })
    }

    /// Every key, in the order `--help` lists them.
    public static let all: [ConfigurationKey] = coreKeys + accessKeys + overlayKeys + mqttKeys + httpSinkKeys

    /// The keys of the daemon's core: listening, the camera, storage, HTTP limits, jobs.
    static let coreKeys: [ConfigurationKey] = [
        ConfigurationKey(
            name: "listen", valueName: "LIST",
            help:
                "where to serve HTTP, comma-separated: HOST:PORT (numeric IPv4, or IPv6 in brackets: [::1]:8080) or unix:/path (mode 0660, removed on exit); loopback unless you choose otherwise; systemd's socket activation replaces it",
            apply: { config, text in
                var addresses: [ListenAddress] = []
                for part in text.split(separator: ",").map({ $0.trimmingSpaces() }) where !part.isEmpty {
                    guard let address = ListenAddress(part) else {
                        throw ConfigurationError(
                            "listen: '\(part)' is not HOST:PORT or unix:/path (e.g. 127.0.0.1:8080, [::1]:8080, unix:/run/shutterd.sock)"
                        )
                    }
                    addresses.append(address)
                }
                guard !addresses.isEmpty else {
                    throw ConfigurationError("listen: give at least one address")
                }
                config.listenAddresses = addresses
            },
            current: { $0.listenAddresses.map(\.description).joined(separator: ",") }),
        optionalPath(
            "tls_cert",
            "PEM certificate (chain) to serve HTTPS instead of HTTP with, together with tls_key; SIGHUP reloads both",
            \.tlsCertificatePath),
        optionalPath(
            "tls_key", "PEM private key of tls_cert (both or neither)", \.tlsKeyPath),
        ConfigurationKey(
            name: "data_dir", valueName: "PATH",
            help: "directory for the catalog (catalog.sqlite) and the pictures (media/{id}.jpg)",
            apply: { config, text in
                guard !text.isEmpty else { throw ConfigurationError("data_dir: must not be empty") }
                config.dataDirectory = text
            },
            current: { $0.dataDirectory }),
        ConfigurationKey(
            name: "camera", valueName: "SOURCE",
            help:
                "'auto' (the first V4L2 capture device, else the test pattern), 'test-pattern', or a device path such as /dev/video0",
            apply: { config, text in
                guard
                    text == "auto" || text == "test-pattern"
                        || (text.hasPrefix("/dev/") && !text.contains(".."))
                else {
                    throw ConfigurationError(
                        "camera: '\(text)' is not 'auto', 'test-pattern' or a device path such as /dev/video0"
                    )
                }
                config.camera = text
            },
            current: { $0.camera }),
        ConfigurationKey(
            name: "camera_formats", valueName: "LIST",
            help:
                "pixel formats to ask a V4L2 camera for, most wanted first (mjpeg is passed through, the others are encoded)",
            apply: { config, text in
                let formats = text.split(separator: ",").map { $0.trimmingSpaces().lowercased() }
                let known = ["mjpeg", "yuyv", "nv12", "yuv420"]
                guard !formats.isEmpty, formats.allSatisfy(known.contains) else {
                    throw ConfigurationError(
                        "camera_formats: '\(text)' must be a comma-separated list of \(known.joined(separator: ", "))"
                    )
                }
                config.cameraFormats = formats
            },
            current: { $0.cameraFormats.joined(separator: ",") }),
        integer(
            "warmup_ms", "MS",
            "frames are dropped for this long after the camera opens, so exposure settles before the first picture",
            range: 0...10000, \.warmupMilliseconds),
        integer(
            "idle_after_s", "S",
            "close the camera after this long with nobody wanting a frame and no job active (0: never); the next request reopens it, warm-up included",
            range: 0...86400, \.idleAfterSeconds),
        integer(
            "reopen_interval_ms", "MS", "how often a failed or unplugged camera is reopened",
            range: 100...60000,
            \.reopenIntervalMilliseconds),
        ConfigurationKey(
            name: "size", valueName: "WxH",
            help: "capture size in pixels, e.g. 1280x720 (even numbers, at most 7680x4320)",
            apply: { config, text in
                let parts = text.lowercased().split(separator: "x")
                guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), (16...7680).contains(w),
                    (16...4320).contains(h), w % 2 == 0, h % 2 == 0
                else {
                    throw ConfigurationError(
                        "size: '\(text)' is not WIDTHxHEIGHT with even sides from 16x16 to 7680x4320")
                }
                config.width = w
                config.height = h
            },
            current: { "\($0.width)x\($0.height)" }),
        integer("fps", "N", "frames per second to capture (1 to 120)", range: 1...120, \.fps),
        integer("quality", "1-100", "JPEG quality of encoded frames (1 to 100)", range: 1...100, \.quality),
        ConfigurationKey(
            name: "log_level", valueName: "LEVEL",
            help: "least severe log level written to stderr: trace, debug, info, notice, warning, error",
            apply: { config, text in
                guard let level = Logger.Level(rawValue: text.lowercased()) else {
                    throw ConfigurationError(
                        "log_level: '\(text)' is not one of trace, debug, info, notice, warning, error")
                }
                config.logLevel = level
            },
            current: { $0.logLevel.rawValue }),
        ConfigurationKey(
            name: "log_format", valueName: "FORMAT",
            help:
                "log lines as text (time level label: message key=value) or json (one object a line: ts, level, label, msg and the fields), for journald, Loki or Elastic",
            apply: { config, text in
                guard let format = LogStyle.Format(rawValue: text.lowercased()) else {
                    throw ConfigurationError("log_format: '\(text)' is not text or json")
                }
                config.logFormat = format
            },
            current: { $0.logFormat.rawValue }),
        boolean("access_log", "log one line per HTTP request", \.accessLog),
        integer(
            "snap_timeout_ms", "MS",
            "how long a snap or a preview waits for a fresh frame before answering 503",
            range: 100...60000, \.snapTimeoutMilliseconds),
        integer(
            "max_pending_snaps", "N",
            "POST /snap requests in progress at once (waiting for a frame or for storage), a quarter of them from one client address; more are answered 503",
            range: 1...10_000, \.maxPendingSnaps),
        integer(
            "preview_stall_timeout_ms", "MS",
            "a /preview.mjpg viewer that reads nothing for this long is disconnected",
            range: 100...3_600_000, \.previewStallTimeoutMilliseconds),
        integer(
            "max_event_streams", "N", "open /events streams at once; more are answered 503",
            range: 1...100_000, \.maxEventStreams),
        integer(
            "max_long_polls", "N",
            "requests waiting at once with wait= (GET /library, GET /jobs/{id}); more are answered 503",
            range: 1...100_000, \.maxLongPolls),
        integer(
            "event_keep_alive_ms", "MS",
            "an /events stream silent for this long gets a comment line, so proxies keep it open",
            range: 100...3_600_000, \.eventKeepAliveMilliseconds),
        integer(
            "retention_max_pictures", "N",
            "the most pictures kept; the oldest not marked keep go first (0: no limit)",
            range: 0...Int(Int32.max), \.retentionMaxPictures),
        integer(
            "retention_max_bytes", "BYTES",
            "the most bytes the pictures take together; the oldest not marked keep go first (0: no limit)",
            range: 0...Int.max, \.retentionMaxBytes),
        integer(
            "retention_max_age_s", "S",
            "pictures older than this are removed unless marked keep (0: no limit)",
            range: 0...Int(Int32.max), \.retentionMaxAgeSeconds),
        integer(
            "retention_min_age_s", "S", "retention never removes a picture younger than this",
            range: 0...Int(Int32.max), \.retentionMinAgeSeconds),
        integer(
            "min_free_bytes", "BYTES",
            "a snap that would leave less free disk than this is refused with 507, storing nothing (0: off)",
            range: 0...Int.max, \.minFreeBytes),
        integer(
            "outbox_max_events", "N",
            "the most events kept for /events replay (Last-Event-ID) and for sinks that are behind; the oldest go first",
            range: 1...100_000_000, \.outboxMaxEvents),
        integer(
            "outbox_max_age_s", "S",
            "events older than this leave the history, delivered or not (0: no age limit)",
            range: 0...Int(Int32.max), \.outboxMaxAgeSeconds),
        integer(
            "max_connections", "N",
            "open HTTP connections; more are answered 503 (lowered to fit the descriptor limit, with a warning)",
            range: 1...100_000, \.http.maxConnections),
        integer(
            "max_connections_per_peer", "N",
            "open HTTP connections from one client address, loopback included; more are answered 503 (0: a quarter of max_connections)",
            range: 0...100_000, \.http.maxConnectionsPerPeer),
        integer(
            "header_timeout_ms", "MS",
            "time from accepting a connection until its first request head is complete: silence is closed without an answer, a partial head gets 408",
            range: 100...3_600_000, \.http.headerTimeoutMilliseconds),
        integer(
            "request_timeout_ms", "MS",
            "time from a request's first byte until it must be complete (else 408: the slowloris defence)",
            range: 100...3_600_000, \.http.requestTimeoutMilliseconds),
        integer(
            "idle_timeout_ms", "MS", "idle keep-alive connections are closed after this",
            range: 100...3_600_000,
            \.http.idleTimeoutMilliseconds),
        integer(
            "write_timeout_ms", "MS", "a client that reads nothing of its response for this long is dropped",
            range: 100...3_600_000, \.http.writeTimeoutMilliseconds),
        integer(
            "max_header_bytes", "BYTES", "the most bytes of request line and headers (else 431)",
            range: 1024...1_048_576,
            \.http.limits.maxHeaderBytes),
        integer(
            "max_target_bytes", "BYTES", "the most bytes of a request target (else 414)",
            range: 256...1_048_576,
            \.http.limits.maxTargetBytes),
        integer(
            "max_body_bytes", "BYTES", "the most bytes of a request body (else 413)",
            range: 0...1_073_741_824,
            \.http.limits.maxBodyBytes),
        integer(
            "max_pipelined_requests", "N",
            "requests read ahead on one connection before their answers are written",
            range: 1...1024,
            \.http.maxPipelinedRequests),
        integer(
            "shutdown_grace_ms", "MS", "on SIGTERM, how long in-flight responses may take",
            range: 0...600_000,
            \.http.shutdownGraceMilliseconds),
        integer(
            "max_active_jobs", "N", "capture jobs that may be scheduled or running at once (else 409)",
            range: 1...1000, \.maxActiveJobs),
        integer(
            "max_job_shots", "N",
            "the most shots one interval or burst job may ask for (its count, or what until or duration imply)",
            range: 1...10_000_000,
            \.maxJobShots),
    ]
}
