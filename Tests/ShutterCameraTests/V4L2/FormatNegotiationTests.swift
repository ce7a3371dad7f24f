import Testing

@testable import ShutterCamera

@Suite struct FormatNegotiationTests {
    static let mjpg = FourCC.code("MJPG")!
    static let yuyv = FourCC.code("YUYV")!

    static func rates(_ fps: [Int]) -> FrameRates {
        .discrete(fps.map { FrameInterval(fps: $0) })
    }

    static func size(_ width: Int, _ height: Int, _ fps: [Int]) -> OfferedSize {
        OfferedSize(size: FrameSize(width: width, height: height), rates: rates(fps))
    }

    /// What a typical UVC webcam offers: MJPEG at every size at full rate, YUYV slower as it grows.
    static let webcam: [OfferedFormat] = [
        OfferedFormat(
            fourcc: mjpg, description: "Motion-JPEG",
            sizes: [size(1920, 1080, [30, 15]), size(1280, 720, [30, 15]), size(640, 480, [30, 15, 5])]),
        OfferedFormat(
            fourcc: yuyv, description: "YUYV 4:2:2",
            sizes: [size(640, 480, [30, 15]), size(1280, 720, [10, 5]), size(1920, 1080, [5])]),
    ]

    /// One negotiation and what it must choose.
    struct Case: Sendable, CustomTestStringConvertible {
        var label: String
        var offered: [OfferedFormat]
        var requested: CameraMode
        var preference: [PixelFormat] = [.mjpeg, .yuyv, .nv12, .yuv420]
        var format: PixelFormat
        var fourcc: UInt32
        var size: FrameSize
        var fps: Double
        var exact: Bool
        var testDescription: String { label }
    }

    static let cases: [Case] = [
        Case(
            label: "MJPEG at the requested size", offered: webcam,
            requested: CameraMode(width: 1280, height: 720, fps: 30),
            format: .mjpeg, fourcc: mjpg, size: FrameSize(width: 1280, height: 720), fps: 30, exact: true),
        Case(
            label: "preference puts YUYV first", offered: webcam,
            requested: CameraMode(width: 640, height: 480, fps: 30),
            preference: [.yuyv, .mjpeg], format: .yuyv, fourcc: yuyv,
            size: FrameSize(width: 640, height: 480), fps: 30,
            exact: true),
        Case(
            label: "closest size when the exact one is missing", offered: webcam,
            requested: CameraMode(width: 800, height: 600, fps: 30), format: .mjpeg, fourcc: mjpg,
            size: FrameSize(width: 640, height: 480), fps: 30, exact: false),
        Case(
            label: "nearest offered rate", offered: webcam,
            requested: CameraMode(width: 640, height: 480, fps: 8),
            format: .mjpeg, fourcc: mjpg, size: FrameSize(width: 640, height: 480), fps: 5, exact: true),
        Case(
            label: "YUYV-only camera runs at what it has", offered: [webcam[1]],
            requested: CameraMode(width: 1280, height: 720, fps: 30), format: .yuyv, fourcc: yuyv,
            size: FrameSize(width: 1280, height: 720), fps: 10, exact: true),
        Case(
            label: "a format reaching the rate beats a preferred one that does not",
            offered: [
                OfferedFormat(fourcc: mjpg, description: "", sizes: [size(1280, 720, [15])]),
                OfferedFormat(fourcc: yuyv, description: "", sizes: [size(1280, 720, [30])]),
            ],
            requested: CameraMode(width: 1280, height: 720, fps: 30), format: .yuyv, fourcc: yuyv,
            size: FrameSize(width: 1280, height: 720), fps: 30, exact: true),
        Case(
            label: "29.97 fps counts as reaching 30",
            offered: [
                OfferedFormat(
                    fourcc: mjpg, description: "",
                    sizes: [
                        OfferedSize(
                            size: FrameSize(width: 640, height: 480),
                            rates: .discrete([FrameInterval(numerator: 1001, denominator: 30000)]))
                    ]),
                OfferedFormat(fourcc: yuyv, description: "", sizes: [size(640, 480, [30])]),
            ],
            requested: CameraMode(width: 640, height: 480, fps: 30), format: .mjpeg, fourcc: mjpg,
            size: FrameSize(width: 640, height: 480), fps: 30000.0 / 1001, exact: true),
        Case(
            label: "JPEG is MJPEG under its old name",
            offered: [
                OfferedFormat(
                    fourcc: FourCC.code("JPEG")!, description: "JFIF JPEG", sizes: [size(640, 480, [30])])
            ],
            requested: CameraMode(width: 640, height: 480, fps: 30), format: .mjpeg,
            fourcc: FourCC.code("JPEG")!,
            size: FrameSize(width: 640, height: 480), fps: 30, exact: true),
        Case(
            label: "equally close sizes: the larger",
            offered: [
                OfferedFormat(
                    fourcc: yuyv, description: "", sizes: [size(900, 600, [30]), size(1100, 600, [30])])
            ],
            requested: CameraMode(width: 1000, height: 600, fps: 30), format: .yuyv, fourcc: yuyv,
            size: FrameSize(width: 1100, height: 600), fps: 30, exact: false),
        Case(
            label: "a range of rates takes the requested one",
            offered: [
                OfferedFormat(
                    fourcc: FourCC.code("NV12")!, description: "",
                    sizes: [
                        OfferedSize(
                            size: FrameSize(width: 640, height: 480),
                            rates: .range(fastest: FrameInterval(fps: 60), slowest: FrameInterval(fps: 1)))
                    ])
            ],
            requested: CameraMode(width: 640, height: 480, fps: 24), format: .nv12,
            fourcc: FourCC.code("NV12")!,
            size: FrameSize(width: 640, height: 480), fps: 24, exact: true),
    ]

    @Test(arguments: cases)
    func chooses(_ example: Case) throws {
        let choice = try FormatNegotiation.choose(
            offered: example.offered, requested: example.requested, preference: example.preference)
        #expect(choice.pixelFormat == example.format)
        #expect(choice.fourcc == example.fourcc)
        #expect(choice.size == example.size)
        #expect(choice.interval.fps == example.fps)
        #expect(choice.isExactSize == example.exact)
    }

    @Test func refusesACameraWithNoReadableFormatAndSaysWhatItHas() {
        let offered = [
            OfferedFormat(
                fourcc: FourCC.code("H264")!, description: "H.264", sizes: [Self.size(1920, 1080, [30])]),
            OfferedFormat(fourcc: FourCC.code("GREY")!, description: "8-bit Greyscale", sizes: []),
        ]
        let error = #expect(throws: CameraError.self) {
            try FormatNegotiation.choose(
                offered: offered, requested: CameraMode(width: 640, height: 480, fps: 30),
                preference: [.mjpeg, .yuyv, .nv12, .yuv420])
        }
        guard case .unsupported(let message) = error else {
            Issue.record("expected unsupported, got \(String(describing: error))")
            return
        }
        #expect(message.contains("MJPG, YUYV, NV12, YU12"))
        #expect(message.contains("H264 (H.264), GREY (8-bit Greyscale)"))
    }

    @Test func preferenceLimitsWhatIsUsed() {
        #expect(throws: CameraError.self) {
            try FormatNegotiation.choose(
                offered: Self.webcam, requested: CameraMode(width: 640, height: 480, fps: 30),
                preference: [.nv12])
        }
    }
}
