// swift-tools-version:6.0
import PackageDescription

// libFuzzer targets for Shutter's parsers of untrusted input (docs/fuzzing.md). A package of its
// own, so the daemon's build never sees the fuzzer flags: `fuzz/run` builds it with
// `-sanitize=fuzzer,address`, in debug, where `@testable import` reaches the parsers that are
// internal to their module without making them public.
let package = Package(
    name: "ShutterFuzz",
    dependencies: [.package(name: "Shutter", path: "..")],
    targets: [
        // Declares libFuzzer's LLVMFuzzerRunDriver, which Swift cannot see otherwise.
        .target(name: "CFuzzerDriver"),
        .target(name: "FuzzSupport", dependencies: ["CFuzzerDriver"]),
        .executableTarget(
            name: "FuzzHTTPRequestParser",
            dependencies: ["FuzzSupport", .product(name: "ShutterHTTP", package: "Shutter")]),
        .executableTarget(
            name: "FuzzConditionalRange",
            dependencies: ["FuzzSupport", .product(name: "ShutterHTTP", package: "Shutter")]),
        .executableTarget(
            name: "FuzzAccess",
            dependencies: [
                "FuzzSupport", .product(name: "ShutterHTTP", package: "Shutter"),
                .product(name: "ShutterAccess", package: "Shutter"),
                .product(name: "ShutterSystem", package: "Shutter"),
            ]),
        .executableTarget(
            name: "FuzzMJPEGRepair",
            dependencies: ["FuzzSupport", .product(name: "ShutterCamera", package: "Shutter")]),
        .executableTarget(
            name: "FuzzJPEGHeader",
            dependencies: ["FuzzSupport", .product(name: "ShutterCamera", package: "Shutter")]),
        .executableTarget(
            name: "FuzzLibraryQuery",
            dependencies: [
                "FuzzSupport", .product(name: "ShutterHTTP", package: "Shutter"),
                .product(name: "ShutterAPI", package: "Shutter"),
            ]),
        .executableTarget(
            name: "FuzzEventStream",
            dependencies: [
                "FuzzSupport", .product(name: "ShutterHTTP", package: "Shutter"),
                .product(name: "ShutterCatalog", package: "Shutter"),
                .product(name: "ShutterAPI", package: "Shutter"),
            ]),
        .executableTarget(
            name: "FuzzPreviewPart",
            dependencies: [
                "FuzzSupport", .product(name: "ShutterSystem", package: "Shutter"),
                .product(name: "ShutterCapture", package: "Shutter"),
                .product(name: "ShutterAPI", package: "Shutter"),
            ]),
        .executableTarget(
            name: "FuzzJSONBodies",
            dependencies: [
                "FuzzSupport", .product(name: "ShutterHTTP", package: "Shutter"),
                .product(name: "ShutterAPI", package: "Shutter"),
                .product(name: "ShutterJobs", package: "Shutter"),
            ]),
    ],
    swiftLanguageModes: [.v6]
)
