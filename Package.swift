// swift-tools-version:6.0
import PackageDescription

// Each module has one job, and dependencies point only down this list
// (docs/ARCHITECTURE.md draws the house and says which module to open for what):
//
//   shutterd          the executable: blocks signals, reads the command line, runs the daemon
//   ShutterDaemon     the composition root: configuration keys and loading, building every
//                     service, signals, start-up and shutdown in reverse order
//   ShutterAPI        route handlers, one file per resource (snap, library, media, jobs, camera,
//                     status, preview), and the one place domain errors become HTTP statuses
//   ShutterAccess     who may do what: access tokens and scopes, signed links, failed-login
//                     throttling, the Host/Origin/CORS browser defences (an HTTPRequestPolicy)
//   ShutterWeb        the web page: index.html, app.js and style.css embedded at build time, CSP hashes
//   ShutterMQTT       the MQTT sink (libmosquitto on a thread of its own), Home Assistant
//                     discovery, and the snap and job commands taken from the broker
//   ShutterOutbox     delivers the catalog's event history to sinks (MQTT, webhooks, S3): one
//                     dispatcher per sink, in order, at least once, with backoff
//   ShutterJobRunner  JobService: runs job schedules, takes their shots, persists them
//   ShutterCapture    the camera's one owner (CaptureService and its capture thread), the frame
//                     exchange, and the live-preview fan-out and its scalers; no HTTP
//   ShutterJobs       job specs and schedules: pure state machines on an injected clock
//   ShutterCatalog    the picture catalog: SQLite and the media directory, on a thread of its own
//   ShutterCamera     camera sources (V4L2, test pattern), JPEG encode and decode, MJPEG repair,
//                     pixel conversion, and what is drawn on or written into a picture: rotation,
//                     the burned-in text (FreeType), the EXIF block
//   ShutterHTTP       the epoll event loop, the HTTP/1.1 server and its state machines, the router,
//                     and the connection transports (plain TCP, TLS with OpenSSL's libssl)
//   ShutterSystem     the OS layer: the one syscall wrapper, the clock seam, threads, the logger, SHA-256
//   C targets         declarations Swift cannot import (CShutterLinux, CV4L2), the per-pixel
//                     loops (CShutterPixels), SQLite's VFS shim that keeps a failed write's errno
//                     (CShutterSQLite), and the Debian libraries (system-library targets)
let package = Package(
    name: "Shutter",
    products: [
        .executable(name: "shutterd", targets: ["shutterd"]),
        // For fuzz/ (a package of its own that depends on this one by path, docs/fuzzing.md):
        // a package can only depend on another's products, and these are the modules it fuzzes.
        .library(name: "ShutterHTTP", targets: ["ShutterHTTP"]),
        .library(name: "ShutterAccess", targets: ["ShutterAccess"]),
        .library(name: "ShutterCamera", targets: ["ShutterCamera"]),
        .library(name: "ShutterJobs", targets: ["ShutterJobs"]),
        .library(name: "ShutterCatalog", targets: ["ShutterCatalog"]),
        .library(name: "ShutterCapture", targets: ["ShutterCapture"]),
        .library(name: "ShutterSystem", targets: ["ShutterSystem"]),
        .library(name: "ShutterAPI", targets: ["ShutterAPI"]),
    ],
    targets: [
        // Declarations that Swift's Glibc module does not import (epoll, eventfd, signalfd,
        // timerfd, accept4, sendfile, pthread helpers): see docs/SWIFT-ON-LINUX.md.
        .target(name: "CShutterLinux"),
        // The per-pixel loops every encoded YUYV frame goes through, where C vectorises best.
        .target(name: "CShutterPixels"),
        // The V4L2 UAPI (<linux/videodev2.h>) with its function-like VIDIOC_* macros
        // exposed as getters; the camera talks to the kernel directly, without libv4l2.
        .target(name: "CV4L2"),
        .systemLibrary(
            name: "CTurboJPEG", pkgConfig: "libturbojpeg",
            providers: [.apt(["libturbojpeg0-dev"])]),
        // Converts the pixel formats Shutter does not read itself (RGB, Bayer, vendor formats)
        // to YU12; its ioctls are routed through glibc (see shim.h) so tests can emulate the camera.
        .systemLibrary(
            name: "CV4LConvert", pkgConfig: "libv4lconvert",
            providers: [.apt(["libv4l-dev"])]),
        // Renders the burned-in text's glyphs (anti-aliased coverage) from a real font file.
        .systemLibrary(
            name: "CFreeType", pkgConfig: "freetype2",
            providers: [.apt(["libfreetype-dev"])]),
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),
        // The default SQLite VFS with the errno of a failed write or sync kept for its thread, so
        // a full disk met by the WAL's fsync is told apart from other I/O errors.
        .target(name: "CShutterSQLite", dependencies: ["CSQLite"]),
        // SHA-256 for picture checksums and random tokens, from OpenSSL's libcrypto
        // rather than a hand-written digest.
        .systemLibrary(
            name: "CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),
        // TLS for the HTTPS server, from OpenSSL's libssl (with kernel TLS where offered);
        // shim.h exposes the option and BIO macros Swift cannot import.
        .systemLibrary(
            name: "COpenSSL", pkgConfig: "libssl",
            providers: [.apt(["libssl-dev"])]),

        // The MQTT client of the MQTT sink (Home Assistant), from Eclipse Mosquitto's libmosquitto.
        .systemLibrary(
            name: "CMosquitto", pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]),
        // HTTP(S) client for the webhook and S3 sinks: one multi handle on its own thread, AWS
        // Signature V4 built in (CURLOPT_AWS_SIGV4), certificates checked against the system store.
        // libcurl is loaded with dlopen when a sink first needs it, not linked (include/CCurl.h
        // says why); its headers come from libcurl4-openssl-dev.
        .target(name: "CCurl"),

        .target(name: "ShutterSystem", dependencies: ["CShutterLinux", "CCrypto"]),
        .target(name: "ShutterHTTP", dependencies: ["ShutterSystem", "CShutterLinux", "COpenSSL"]),
        .target(
            name: "ShutterCamera",
            dependencies: [
                "ShutterSystem", "CTurboJPEG", "CShutterPixels", "CV4L2", "CV4LConvert", "CFreeType",
            ]),
        .target(name: "ShutterCatalog", dependencies: ["ShutterSystem", "CSQLite", "CShutterSQLite"]),
        .target(name: "ShutterJobs", dependencies: ["ShutterSystem"]),
        .target(name: "ShutterCapture", dependencies: ["ShutterSystem", "ShutterCamera"]),
        .target(
            name: "ShutterJobRunner",
            dependencies: ["ShutterSystem", "ShutterJobs", "ShutterCapture", "ShutterCatalog"]),
        .target(name: "ShutterAccess", dependencies: ["ShutterSystem", "ShutterHTTP"]),
        .target(name: "ShutterOutbox", dependencies: ["ShutterSystem", "ShutterCatalog", "CCurl"]),
        .target(
            name: "ShutterMQTT",
            dependencies: ["ShutterSystem", "ShutterCatalog", "ShutterOutbox", "CMosquitto"]),
        .target(
            name: "ShutterWeb", dependencies: ["ShutterSystem", "ShutterHTTP"],
            resources: [
                .embedInCode("Resources/index.html"),
                .embedInCode("Resources/app.js"),
                .embedInCode("Resources/style.css"),
            ]),
        .target(
            name: "ShutterAPI",
            dependencies: [
                "ShutterSystem", "ShutterHTTP", "ShutterCamera", "ShutterCatalog", "ShutterJobs",
                "ShutterCapture", "ShutterJobRunner", "ShutterWeb", "ShutterAccess", "ShutterOutbox",
            ],
            // The OpenAPI document of the whole API, served at /openapi.json as it is in the repository.
            resources: [.embedInCode("Resources/openapi.json")]),
        .target(
            name: "ShutterDaemon",
            dependencies: [
                "ShutterSystem", "ShutterHTTP", "ShutterCamera", "ShutterCatalog", "ShutterJobs",
                "ShutterCapture", "ShutterJobRunner", "ShutterAPI", "ShutterAccess", "ShutterOutbox",
                "ShutterMQTT", "CShutterLinux",
            ]),
        .executableTarget(name: "shutterd", dependencies: ["ShutterDaemon", "ShutterSystem"]),
        // benchmarks/camera_bench.py runs this beside tjbench: the YUYV encode path, unthrottled.
        .executableTarget(
            name: "shutter-encode-bench", dependencies: ["ShutterCamera", "ShutterSystem"],
            path: "benchmarks/EncodeBenchmark"),

        // Fakes for every seam live here, never copied into test files.
        .target(
            name: "ShutterTestSupport",
            dependencies: [
                "ShutterSystem", "ShutterHTTP", "ShutterCamera", "ShutterCapture", "ShutterCatalog",
                "ShutterJobRunner", "ShutterOutbox", "ShutterMQTT",
            ],
            path: "Tests/ShutterTestSupport"),
        .testTarget(name: "ShutterSystemTests", dependencies: ["ShutterSystem", "ShutterTestSupport"]),
        .testTarget(
            name: "ShutterHTTPTests", dependencies: ["ShutterHTTP", "ShutterSystem", "ShutterTestSupport"]),
        .testTarget(
            name: "ShutterCameraTests",
            dependencies: ["ShutterCamera", "ShutterSystem", "ShutterTestSupport", "CTurboJPEG", "CV4L2"]),
        .testTarget(
            name: "ShutterCatalogTests",
            dependencies: ["ShutterCatalog", "ShutterSystem", "ShutterTestSupport", "CSQLite"]),
        .testTarget(
            name: "ShutterJobsTests", dependencies: ["ShutterJobs", "ShutterSystem", "ShutterTestSupport"]),
        .testTarget(
            name: "ShutterCaptureTests",
            dependencies: ["ShutterCapture", "ShutterCamera", "ShutterSystem", "ShutterTestSupport"]),
        .testTarget(
            name: "ShutterJobRunnerTests",
            dependencies: [
                "ShutterJobRunner", "ShutterJobs", "ShutterCatalog", "ShutterCapture", "ShutterCamera",
                "ShutterSystem",
                "ShutterTestSupport",
            ]),
        .testTarget(
            name: "ShutterAccessTests",
            dependencies: ["ShutterAccess", "ShutterHTTP", "ShutterSystem", "ShutterTestSupport"]),
        .testTarget(name: "ShutterWebTests", dependencies: ["ShutterWeb", "ShutterHTTP"]),
        .testTarget(
            name: "ShutterOutboxTests",
            dependencies: ["ShutterOutbox", "ShutterCatalog", "ShutterSystem", "ShutterTestSupport"]),
        .testTarget(
            name: "ShutterMQTTTests",
            dependencies: ["ShutterMQTT", "ShutterCatalog", "ShutterSystem", "ShutterTestSupport"]),
        .testTarget(
            name: "ShutterAPITests",
            dependencies: [
                "ShutterAPI", "ShutterAccess", "ShutterCamera", "ShutterCapture", "ShutterCatalog",
                "ShutterHTTP", "ShutterJobRunner",
                "ShutterJobs", "ShutterSystem", "ShutterTestSupport",
            ]),
        .testTarget(
            name: "ShutterDaemonTests",
            dependencies: [
                "ShutterDaemon", "ShutterHTTP", "ShutterSystem", "ShutterCatalog", "ShutterOutbox",
            ]),
    ],
    swiftLanguageModes: [.v6]
)
