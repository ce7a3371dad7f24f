import Testing

@testable import ShutterCamera

@Suite struct JPEGEncoderTests {
    /// The 75% bars as full-range RGB: 0.75 x 255 = 191 where a primary is on.
    static let expectedBars: [(name: String, rgb: (Int, Int, Int))] = [
        ("white", (191, 191, 191)), ("yellow", (191, 191, 0)), ("cyan", (0, 191, 191)),
        ("green", (0, 191, 0)),
        ("magenta", (191, 0, 191)), ("red", (191, 0, 0)), ("blue", (0, 0, 191)), ("black", (0, 0, 0)),
    ]

    /// RGB at (x, y) of a decoded image.
    static func pixel(_ decoded: (width: Int, height: Int, pixels: [UInt8]), x: Int, y: Int) -> (
        Int, Int, Int
    ) {
        let i = (y * decoded.width + x) * 3
        return (Int(decoded.pixels[i]), Int(decoded.pixels[i + 1]), Int(decoded.pixels[i + 2]))
    }

    /// Checks the centre of each bar, half way down the bars and clear of the strip below them.
    static func expectBars(_ decoded: (width: Int, height: Int, pixels: [UInt8]), tolerance: Int) {
        // The bars fill the top two thirds, so a third of the way down is inside them.
        let y = decoded.height / 3
        for (index, bar) in expectedBars.enumerated() {
            let x = (2 * index + 1) * decoded.width / 16
            let got = pixel(decoded, x: x, y: y)
            let close =
                abs(got.0 - bar.rgb.0) <= tolerance && abs(got.1 - bar.rgb.1) <= tolerance
                && abs(got.2 - bar.rgb.2) <= tolerance
            #expect(close, "\(bar.name) bar at (\(x), \(y)) is \(got), expected \(bar.rgb) +-\(tolerance)")
        }
    }

    @Test(arguments: [(1280, 720), (640, 480)])
    func testPatternDecodesToTheBarColours(width: Int, height: Int) throws {
        let source = TestPatternSource(mode: CameraMode(width: width, height: height, fps: 30), paced: false)
        try source.start()
        guard case .yuv(let image) = try source.nextFrame().image else {
            Issue.record("test pattern should give YUV")
            return
        }
        let jpeg = try JPEGEncoder(quality: 90).encode(image)
        #expect(jpeg.starts(with: [0xFF, 0xD8]))
        let decoded = try JPEGDecoder.decodeRGB(jpeg)
        #expect(decoded.width == width)
        #expect(decoded.height == height)
        // Flat bar centres survive JPEG almost exactly; a limited-range image encoded
        // without stretching would be 11 to 16 levels off (black at 16, white at 180).
        Self.expectBars(decoded, tolerance: 6)
    }

    @Test func encodes422AndSaysSo() throws {
        var image = YUVImage(width: 320, height: 240, subsampling: .yuv422)
        for (index, color) in TestPatternSource.barColors.enumerated() {
            image.fill(x: index * 40, y: 0, width: 40, height: 240, luma: color.y, cb: color.cb, cr: color.cr)
        }
        let jpeg = try JPEGEncoder(quality: 90).encode(image)
        let header = try JPEGDecoder.header(of: jpeg)
        #expect(header.width == 320)
        #expect(header.height == 240)
        #expect(header.subsampling == .yuv422)
        Self.expectBars(try JPEGDecoder.decodeRGB(jpeg), tolerance: 6)
    }

    @Test func encodes420AndSaysSo() throws {
        let jpeg = try JPEGEncoder(quality: 50).encode(YUVImage(width: 64, height: 48, subsampling: .yuv420))
        #expect(try JPEGDecoder.header(of: jpeg).subsampling == .yuv420)
    }

    @Test func rangeIsStretchedToFull() throws {
        var image = YUVImage(width: 32, height: 16, subsampling: .yuv420)
        image.fill(x: 16, y: 0, width: 16, height: 16, luma: 235, cb: 128, cr: 128)
        let decoded = try JPEGDecoder.decodeRGB(try JPEGEncoder(quality: 95).encode(image))
        #expect(Self.pixel(decoded, x: 4, y: 8) == (0, 0, 0))
        #expect(Self.pixel(decoded, x: 28, y: 8) == (255, 255, 255))
    }

    @Test func fixedPointRangeStretchMatchesTheExactRatio() {
        for value in 0...255 {
            let luma = min(max(((Double(value) - 16) * 255 / 219).rounded(), 0), 255)
            let chroma = min(max(((Double(value) - 128) * 255 / 224).rounded() + 128, 0), 255)
            #expect(JPEGEncoder.fullRangeLuma(UInt8(value)) == UInt8(luma), "luma \(value)")
            #expect(JPEGEncoder.fullRangeChroma(UInt8(value)) == UInt8(chroma), "chroma \(value)")
        }
    }

    @Test func qualityOutside1To100IsRefused() throws {
        #expect(throws: JPEGError.self) { try JPEGEncoder(quality: 0) }
        #expect(throws: JPEGError.self) { try JPEGEncoder(quality: 101) }
        let encoder = try JPEGEncoder(quality: 1)
        let image = YUVImage(width: 16, height: 16, subsampling: .yuv420)
        _ = try encoder.encode(image)
        encoder.quality = 100
        _ = try encoder.encode(image)
        encoder.quality = -5
        let error = #expect(throws: JPEGError.self) { try encoder.encode(image) }
        #expect(error?.description.contains("-5") == true)
    }

    @Test func higherQualityMakesBiggerFiles() throws {
        let source = TestPatternSource(mode: CameraMode(width: 320, height: 240, fps: 30), paced: false)
        try source.start()
        guard case .yuv(let image) = try source.nextFrame().image else { return }
        let encoder = try JPEGEncoder(quality: 20)
        let small = try encoder.encode(image)
        encoder.quality = 95
        let large = try encoder.encode(image)
        #expect(small.count < large.count)
    }

    @Test func wrongByteCountIsRefused() throws {
        var image = YUVImage(width: 16, height: 16, subsampling: .yuv420)
        image.bytes.removeLast()
        #expect(throws: JPEGError.self) { try JPEGEncoder(quality: 80).encode(image) }
    }

    @Test func outputBufferGrowsForBiggerImagesAndIsReused() throws {
        let encoder = try JPEGEncoder(quality: 80)
        for (width, height) in [(32, 16), (640, 480), (64, 64), (1280, 720), (16, 16)] {
            var image = YUVImage(width: width, height: height, subsampling: .yuv420)
            image.fill(x: 0, y: 0, width: width / 2, height: height, luma: 235, cb: 128, cr: 128)
            let decoded = try JPEGDecoder.decodeRGB(try encoder.encode(image))
            #expect(decoded.width == width && decoded.height == height)
            #expect(Self.pixel(decoded, x: width / 4, y: height / 2) == (255, 255, 255))
            #expect(Self.pixel(decoded, x: width * 3 / 4, y: height / 2) == (0, 0, 0))
        }
    }

    @Test func oddSizesEncode() throws {
        for subsampling in [ChromaSubsampling.yuv420, .yuv422] {
            let jpeg = try JPEGEncoder(quality: 80).encode(
                YUVImage(width: 33, height: 17, subsampling: subsampling))
            let header = try JPEGDecoder.header(of: jpeg)
            #expect(header.width == 33 && header.height == 17 && header.subsampling == subsampling)
        }
    }
}
