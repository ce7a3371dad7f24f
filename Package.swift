// swift-tools-version:6.0
import PackageDescription

// Modules are cut by responsibility so each can be built and tested alone:
// the OS layer (ShutterSystem), the HTTP server (ShutterHTTP), camera sources and
// JPEG encoding (ShutterCamera), the media catalog (ShutterCatalog), the API that
// wires them together (ShutterAPI) and the executable (shutterd).
let package = Package(
    name: "Shutter",
    products: [
        .executable(name: "shutterd", targets: ["shutterd"])
    ],
    targets: [
        // Declarations that Swift's Glibc module does not import (epoll, eventfd,
        // signalfd, timerfd, accept4, sendfile): see ../shared/SWIFT-ON-LINUX.md.
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
        .systemLibrary(
            name: "CSQLite", pkgConfig: "sqlite3",
            providers: [.apt(["libsqlite3-dev"])]),

        // SHA-256 for picture checksums and random tokens, from OpenSSL's libcrypto
        // rather than a hand-written digest.
        .systemLibrary(
            name: "CCrypto", pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"])]),

        .target(name: "ShutterSystem", dependencies: ["CShutterLinux", "CCrypto"]),
        .target(name: "ShutterHTTP", dependencies: ["ShutterSystem", "CShutterLinux"]),
        .target(
            name: "ShutterCamera",
            dependencies: [
                "ShutterSystem", "CTurboJPEG", "CShutterPixels", "CV4L2", "CV4LConvert",
            ]),
        .target(name: "ShutterCatalog", dependencies: ["ShutterSystem", "CSQLite"]),
        .target(
            name: "ShutterAPI",
            dependencies: [
                "ShutterSystem", "ShutterHTTP", "ShutterCamera", "ShutterCatalog", "ShutterJobs",
            ]),
        // Capture job specs and schedules: pure state machines with no I/O, driven by an injected clock.
        .target(name: "ShutterJobs", dependencies: ["ShutterSystem"]),
        .executableTarget(name: "shutterd", dependencies: ["ShutterAPI"]),
        // benchmarks/camera_bench.py runs this beside tjbench: the YUYV encode path, unthrottled.
        .executableTarget(
            name: "shutter-encode-bench", dependencies: ["ShutterCamera", "ShutterSystem"],
            path: "benchmarks/EncodeBenchmark"),

        // Fakes for every seam live here, never copied into test files.
        .target(
            name: "ShutterTestSupport",
            dependencies: ["ShutterSystem", "ShutterHTTP", "ShutterCamera", "ShutterCatalog"],
            path: "Tests/ShutterTestSupport"),
        .testTarget(name: "ShutterSystemTests", dependencies: ["ShutterSystem", "ShutterTestSupport"]),
        .testTarget(name: "ShutterHTTPTests", dependencies: ["ShutterHTTP", "ShutterTestSupport"]),
        .testTarget(
            name: "ShutterCameraTests",
            dependencies: ["ShutterCamera", "ShutterTestSupport", "CTurboJPEG", "CV4L2"]),
        .testTarget(
            name: "ShutterCatalogTests", dependencies: ["ShutterCatalog", "ShutterTestSupport"]),
        .testTarget(
            name: "ShutterAPITests", dependencies: ["ShutterAPI", "ShutterJobs", "ShutterTestSupport"]),
        .testTarget(name: "ShutterJobsTests", dependencies: ["ShutterJobs", "ShutterTestSupport"]),
    ],
    swiftLanguageModes: [.v6]
)
