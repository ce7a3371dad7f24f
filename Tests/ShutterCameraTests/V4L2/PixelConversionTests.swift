import Testing

@testable import ShutterCamera

@Suite struct PixelConversionTests {
    /// The three planes of `image`, split apart.
    static func planes(_ image: YUVImage) -> (y: [UInt8], cb: [UInt8], cr: [UInt8]) {
        let bytes = image.bytes
        return (
            Array(bytes[..<image.cbOffset]), Array(bytes[image.cbOffset..<image.crOffset]),
            Array(bytes[image.crOffset...])
        )
    }

    @Test(arguments: [false, true])
    func wideYUYVRowsTakeTheVectorPathAndMatchTheScalarRules(fullRange: Bool) {
        // 70 pixels: four 16-pixel vector blocks, then a scalar tail of three pairs; the stride
        // has padding that must be skipped.
        let (width, height, stride) = (70, 3, 70 * 2 + 12)
        var generator = SystemRandomNumberGenerator()
        let source = (0..<stride * height).map { _ in UInt8.random(in: 0...255, using: &generator) }
        var image = YUVImage(width: width, height: height, subsampling: .yuv422)
        let converted = source.withUnsafeBytes {
            PixelConversion.convertYUYV($0, bytesPerLine: stride, into: &image, fullRange: fullRange)
        }
        #expect(converted)
        #expect(image.isFullRange == fullRange)
        let (y, cb, cr) = Self.planes(image)
        let luma: (UInt8) -> Int = { Int(fullRange ? JPEGEncoder.fullRangeLuma($0) : $0) }
        let chroma: (UInt8) -> Int = { Int(fullRange ? JPEGEncoder.fullRangeChroma($0) : $0) }
        // The vector path truncates where the scalar one rounds: at most one code value apart.
        let tolerance = fullRange ? 1 : 0
        for row in 0..<height {
            for pair in 0..<width / 2 {
                let group = row * stride + pair * 4
                #expect(abs(Int(y[row * width + 2 * pair]) - luma(source[group])) <= tolerance)
                #expect(abs(Int(cb[row * width / 2 + pair]) - chroma(source[group + 1])) <= tolerance)
                #expect(abs(Int(y[row * width + 2 * pair + 1]) - luma(source[group + 2])) <= tolerance)
                #expect(abs(Int(cr[row * width / 2 + pair]) - chroma(source[group + 3])) <= tolerance)
            }
        }
    }

    @Test func yuyvBecomesPlanar422HonouringTheStride() {
        // 4x2 pixels, 8 bytes of pixels per line plus 4 bytes of padding (0xEE).
        let source: [UInt8] = [
            10, 100, 11, 200, 12, 101, 13, 201, 0xEE, 0xEE, 0xEE, 0xEE,
            20, 110, 21, 210, 22, 111, 23, 211, 0xEE, 0xEE, 0xEE, 0xEE,
        ]
        var image = YUVImage(width: 4, height: 2, subsampling: .yuv422)
        let converted = source.withUnsafeBytes {
            PixelConversion.convertYUYV($0, bytesPerLine: 12, into: &image)
        }
        #expect(converted)
        let (y, cb, cr) = Self.planes(image)
        #expect(y == [10, 11, 12, 13, 20, 21, 22, 23])
        #expect(cb == [100, 101, 110, 111])
        #expect(cr == [200, 201, 210, 211])
    }

    @Test func yuyvWithAnOddWidthKeepsTheLastPixel() {
        // 3x1: the second group's Y1 (99) is padding.
        let source: [UInt8] = [1, 50, 2, 60, 3, 51, 99, 61]
        var image = YUVImage(width: 3, height: 1, subsampling: .yuv422)
        #expect(source.withUnsafeBytes { PixelConversion.convertYUYV($0, bytesPerLine: 8, into: &image) })
        #expect(Self.planes(image).y == [1, 2, 3])
        #expect(Self.planes(image).cb == [50, 51])
        #expect(Self.planes(image).cr == [60, 61])
    }

    @Test func nv12BecomesPlanar420HonouringTheStride() {
        // 4x4 luma with stride 6, then 2 rows of interleaved CbCr with the same stride.
        var source: [UInt8] = []
        for row in 0..<4 { source += (0..<4).map { UInt8(row * 10 + $0) } + [0xEE, 0xEE] }
        source += [100, 200, 101, 201, 0xEE, 0xEE]
        source += [110, 210, 111, 211]  // the last line may stop after its pixels
        var image = YUVImage(width: 4, height: 4, subsampling: .yuv420)
        #expect(source.withUnsafeBytes { PixelConversion.convertNV12($0, bytesPerLine: 6, into: &image) })
        let (y, cb, cr) = Self.planes(image)
        #expect(y == [0, 1, 2, 3, 10, 11, 12, 13, 20, 21, 22, 23, 30, 31, 32, 33])
        #expect(cb == [100, 101, 110, 111])
        #expect(cr == [200, 201, 210, 211])
    }

    @Test func yu12IsCopiedPlaneByPlaneHonouringTheStride() {
        // 4x2 luma with stride 8; Cb and Cr each 2x1 with stride 4.
        let source: [UInt8] = [
            1, 2, 3, 4, 0xEE, 0xEE, 0xEE, 0xEE,
            5, 6, 7, 8, 0xEE, 0xEE, 0xEE, 0xEE,
            100, 101, 0xEE, 0xEE,
            200, 201,
        ]
        var image = YUVImage(width: 4, height: 2, subsampling: .yuv420)
        #expect(source.withUnsafeBytes { PixelConversion.convertYUV420($0, bytesPerLine: 8, into: &image) })
        let (y, cb, cr) = Self.planes(image)
        #expect(y == [1, 2, 3, 4, 5, 6, 7, 8])
        #expect(cb == [100, 101])
        #expect(cr == [200, 201])
    }

    @Test func tightlyPackedYU12IsTheSameBytes() {
        let bytes = (0..<(8 * 4 * 3 / 2)).map { UInt8($0) }
        var image = YUVImage(width: 8, height: 4, subsampling: .yuv420)
        #expect(bytes.withUnsafeBytes { PixelConversion.convertYUV420($0, bytesPerLine: 8, into: &image) })
        #expect(image.bytes == bytes)
    }

    @Test func shortSourcesAreRefusedAndLeaveTheImageAlone() {
        var image = YUVImage(width: 4, height: 2, subsampling: .yuv422)
        let before = image.bytes
        let short = [UInt8](repeating: 7, count: 15)
        #expect(!short.withUnsafeBytes { PixelConversion.convertYUYV($0, bytesPerLine: 8, into: &image) })
        // A stride narrower than a line of pixels is as bad as a short buffer.
        let enough = [UInt8](repeating: 7, count: 64)
        #expect(!enough.withUnsafeBytes { PixelConversion.convertYUYV($0, bytesPerLine: 6, into: &image) })
        #expect(image.bytes == before)

        var planar = YUVImage(width: 4, height: 4, subsampling: .yuv420)
        #expect(!short.withUnsafeBytes { PixelConversion.convertNV12($0, bytesPerLine: 4, into: &planar) })
        #expect(!short.withUnsafeBytes { PixelConversion.convertYUV420($0, bytesPerLine: 4, into: &planar) })
    }

    /// One geometry and the bytes it needs.
    struct ByteCountCase: Sendable, CustomTestStringConvertible {
        var format: PixelFormat
        var width: Int
        var height: Int
        var stride: Int
        var expected: Int?
        var testDescription: String { "\(format) \(width)x\(height) stride \(stride)" }
    }

    static let byteCountCases: [ByteCountCase] = [
        ByteCountCase(format: .yuyv, width: 640, height: 480, stride: 1280, expected: 614_400),
        // The last line needs only its pixels, not the whole stride.
        ByteCountCase(format: .yuyv, width: 640, height: 480, stride: 1536, expected: 1536 * 479 + 1280),
        ByteCountCase(format: .yuyv, width: 640, height: 480, stride: 1000, expected: nil),
        ByteCountCase(format: .nv12, width: 640, height: 480, stride: 640, expected: 460_800),
        ByteCountCase(format: .nv12, width: 640, height: 480, stride: 704, expected: 704 * 719 + 640),
        ByteCountCase(format: .yuv420, width: 640, height: 480, stride: 640, expected: 460_800),
        ByteCountCase(
            format: .yuv420, width: 640, height: 480, stride: 768, expected: 768 * 480 + 384 * 479 + 320),
        ByteCountCase(format: .mjpeg, width: 640, height: 480, stride: 0, expected: nil),
        ByteCountCase(format: .yuyv, width: 0, height: 480, stride: 1280, expected: nil),
    ]

    @Test(arguments: byteCountCases)
    func requiredByteCounts(_ example: ByteCountCase) {
        #expect(
            PixelConversion.requiredByteCount(
                for: example.format, width: example.width, height: example.height,
                bytesPerLine: example.stride)
                == example.expected)
    }

    @Test func yuyvMadeFromAPlanarImageConvertsBackExactly() throws {
        let source = TestPatternSource(mode: CameraMode(width: 96, height: 64, fps: 30), paced: false)
        try source.start()
        guard case .yuv(let picture) = try source.nextFrame().image else {
            Issue.record("expected a YUV frame")
            return
        }
        // Make a 4:2:2 original by repeating each 4:2:0 chroma row, then pack it as YUYV with a stride.
        var original = YUVImage(width: 96, height: 64, subsampling: .yuv422)
        for y in 0..<64 {
            for x in 0..<96 {
                original.bytes[y * 96 + x] = picture.luma(x: x, y: y)
                let (cb, cr) = picture.chroma(x: x, y: y)
                original.bytes[original.cbOffset + y * 48 + x / 2] = cb
                original.bytes[original.crOffset + y * 48 + x / 2] = cr
            }
        }
        let stride = 96 * 2 + 32
        var packed = [UInt8](repeating: 0xEE, count: stride * 64)
        for y in 0..<64 {
            for pair in 0..<48 {
                let at = y * stride + pair * 4
                packed[at] = original.luma(x: 2 * pair, y: y)
                packed[at + 1] = original.bytes[original.cbOffset + y * 48 + pair]
                packed[at + 2] = original.luma(x: 2 * pair + 1, y: y)
                packed[at + 3] = original.bytes[original.crOffset + y * 48 + pair]
            }
        }
        var converted = YUVImage(width: 96, height: 64, subsampling: .yuv422)
        #expect(
            packed.withUnsafeBytes { PixelConversion.convertYUYV($0, bytesPerLine: stride, into: &converted) }
        )
        #expect(converted.bytes == original.bytes)
    }
}
