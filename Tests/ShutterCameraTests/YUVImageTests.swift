import Testing

@testable import ShutterCamera

@Suite struct YUVImageTests {
    @Test func planeLayout420() {
        let image = YUVImage(width: 640, height: 480, subsampling: .yuv420)
        #expect(image.chromaWidth == 320)
        #expect(image.chromaHeight == 240)
        #expect(image.cbOffset == 640 * 480)
        #expect(image.crOffset == 640 * 480 + 320 * 240)
        #expect(image.bytes.count == 640 * 480 * 3 / 2)
    }

    @Test func planeLayout422() {
        let image = YUVImage(width: 640, height: 480, subsampling: .yuv422)
        #expect(image.chromaWidth == 320)
        #expect(image.chromaHeight == 480)
        #expect(image.crOffset == 640 * 480 + 320 * 480)
        #expect(image.bytes.count == 640 * 480 * 2)
    }

    @Test func oddSizesRoundChromaUp() {
        #expect(YUVImage.byteCount(width: 5, height: 3, subsampling: .yuv420) == 15 + 2 * 3 * 2)
        #expect(YUVImage.byteCount(width: 5, height: 3, subsampling: .yuv422) == 15 + 2 * 3 * 3)
    }

    @Test func startsBlack() {
        let image = YUVImage(width: 4, height: 2, subsampling: .yuv420)
        #expect(image.bytes == [16, 16, 16, 16, 16, 16, 16, 16, 128, 128, 128, 128])
    }

    @Test func fillSetsLumaAndCoveringChroma() {
        var image = YUVImage(width: 8, height: 4, subsampling: .yuv420)
        image.fill(x: 2, y: 2, width: 3, height: 2, luma: 200, cb: 50, cr: 60)
        #expect(image.luma(x: 2, y: 2) == 200)
        #expect(image.luma(x: 4, y: 3) == 200)
        #expect(image.luma(x: 5, y: 3) == 16)
        #expect(image.luma(x: 2, y: 1) == 16)
        // x 2...4 touches chroma columns 1 and 2; rows 2...3 touch chroma row 1.
        #expect(image.chroma(x: 2, y: 2) == (50, 60))
        #expect(image.chroma(x: 5, y: 2) == (50, 60))
        #expect(image.chroma(x: 6, y: 2) == (128, 128))
        #expect(image.chroma(x: 2, y: 0) == (128, 128))
    }

    @Test func fillClipsToTheImage() {
        var image = YUVImage(width: 8, height: 4, subsampling: .yuv422)
        image.fill(x: -3, y: -3, width: 100, height: 100, luma: 99, cb: 1, cr: 2)
        #expect(image.bytes[..<32].allSatisfy { $0 == 99 })
        #expect(image.bytes[32..<48].allSatisfy { $0 == 1 })
        #expect(image.bytes[48...].allSatisfy { $0 == 2 })
        image.fill(x: 20, y: 0, width: 4, height: 4, luma: 0, cb: 0, cr: 0)
        #expect(image.bytes[..<32].allSatisfy { $0 == 99 })
    }
}
