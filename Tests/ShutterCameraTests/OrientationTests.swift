import CTurboJPEG
import Testing

@testable import ShutterCamera

/// Rotation and flip: sizes, exact sample positions, and a marker landing in the right corner,
/// for planar YUV and for JPEG (lossless and re-encoded).
struct OrientationTests {
    /// Every rotation with every flip.
    static let all: [Orientation] = [0, 90, 180, 270].flatMap { rotation in
        Orientation.Flip.allCases.map { Orientation(rotation: rotation, flip: $0)! }
    }

    /// Where the source's top-left corner ends up, worked out corner by corner (independently
    /// of the implementation's walk): a quarter turn clockwise takes top-left to top-right.
    static func cornerOfTopLeft(_ orientation: Orientation) -> (right: Bool, bottom: Bool) {
        var (right, bottom) = (false, false)
        for _ in 0..<(orientation.rotation / 90) { (right, bottom) = (!bottom, right) }
        switch orientation.flip {
        case .none: break
        case .horizontal: right.toggle()
        case .vertical: bottom.toggle()
        }
        return (right, bottom)
    }

    /// A black `width` x `height` image with a white, red-tinted 8x8 square at the top left.
    static func marked(width: Int, height: Int, subsampling: ChromaSubsampling) -> YUVImage {
        var image = YUVImage(width: width, height: height, subsampling: subsampling)
        image.fill(x: 0, y: 0, width: 8, height: 8, luma: 235, cb: 100, cr: 200)
        return image
    }

    @Test func onlyQuarterTurnsAreAccepted() {
        #expect(Orientation(rotation: 45, flip: .none) == nil)
        #expect(Orientation(rotation: -90, flip: .none) == nil)
        #expect(Orientation(rotation: 0, flip: .none)!.isIdentity)
        #expect(!Orientation(rotation: 0, flip: .vertical)!.isIdentity)
        // Two routes to the same picture are the same transform.
        #expect(
            Orientation(rotation: 180, flip: .horizontal)!.turboJPEGOperation
                == Orientation(rotation: 0, flip: .vertical)!.turboJPEGOperation)
        #expect(Set(Self.all.map(\.turboJPEGOperation)).count == 8)
    }

    @Test func aQuarterTurnMovesEachSampleWhereItBelongs() {
        // Y rows 1 2 3 4 / 5 6 7 8, chroma one row of two: turned clockwise, the left column
        // (5 over 1... read bottom to top) becomes the top row.
        let image = YUVImage(
            width: 4, height: 2, subsampling: .yuv420, bytes: [1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 20, 21])
        let turned = Orientation(rotation: 90, flip: .none)!.apply(to: image)
        #expect(turned.width == 2 && turned.height == 4)
        #expect(turned.bytes == [5, 1, 6, 2, 7, 3, 8, 4, 10, 11, 20, 21])
        let back = Orientation(rotation: 270, flip: .none)!.apply(to: turned)
        #expect(back.bytes == image.bytes)
        let mirrored = Orientation(rotation: 0, flip: .horizontal)!.apply(to: image)
        #expect(mirrored.bytes == [4, 3, 2, 1, 8, 7, 6, 5, 11, 10, 21, 20])
    }

    @Test(arguments: all, [ChromaSubsampling.yuv420, .yuv422])
    func theMarkerLandsInTheExpectedCorner(orientation: Orientation, subsampling: ChromaSubsampling) {
        let image = Self.marked(width: 48, height: 32, subsampling: subsampling)
        let turned = orientation.apply(to: image)
        let swapped = orientation.rotation % 180 != 0
        #expect(turned.width == (swapped ? 32 : 48) && turned.height == (swapped ? 48 : 32))
        // A quarter turn of 4:2:2 cannot keep 4:2:2 (that would be 4:4:0): it becomes 4:2:0.
        #expect(turned.subsampling == (swapped ? .yuv420 : subsampling))
        let (right, bottom) = Self.cornerOfTopLeft(orientation)
        let x = right ? turned.width - 4 : 3
        let y = bottom ? turned.height - 4 : 3
        #expect(turned.luma(x: x, y: y) == 235)
        #expect(turned.chroma(x: x, y: y) == (100, 200))
        // The opposite corner stays black.
        #expect(turned.luma(x: turned.width - 1 - x, y: turned.height - 1 - y) == 16)
        let marked = turned.bytes[..<(turned.width * turned.height)].filter { $0 == 235 }.count
        #expect(marked == 64)
    }

    /// The JPEG's decoded RGB at (x, y).
    static func rgb(_ decoded: (width: Int, height: Int, pixels: [UInt8]), _ x: Int, _ y: Int) -> [UInt8] {
        let index = (y * decoded.width + x) * 3
        return Array(decoded.pixels[index..<index + 3])
    }

    /// 64x64 is whole 4:2:0 MCUs (turned in the DCT domain); 64x40 is not (re-encoded, every row kept).
    @Test(arguments: [(64, 64, false), (64, 40, true)], all.filter { !$0.isIdentity })
    func jpegsTurnLosslesslyOrByReencodingAndKeepEveryPixel(
        size: (Int, Int, Bool), orientation: Orientation
    ) throws {
        let (width, height, reencodes) = size
        let encoder = try JPEGEncoder(quality: 95)
        let jpeg = try encoder.encode(Self.marked(width: width, height: height, subsampling: .yuv420))
        let transformer = try JPEGTransformer(orientation: orientation)
        let turned = try transformer.transform(jpeg, encoder: encoder)
        #expect(transformer.reencodedFrames == (reencodes ? 1 : 0))
        let decoded = try JPEGDecoder.decodeRGB(turned.jpeg)
        let expected = orientation.size(width: width, height: height)
        #expect(decoded.width == expected.width && decoded.height == expected.height)
        #expect((turned.width, turned.height) == (expected.width, expected.height))
        let (right, bottom) = Self.cornerOfTopLeft(orientation)
        let x = right ? decoded.width - 4 : 3
        let y = bottom ? decoded.height - 4 : 3
        let marker = Self.rgb(decoded, x, y)
        let opposite = Self.rgb(decoded, decoded.width - 1 - x, decoded.height - 1 - y)
        #expect(marker[0] > 200 && marker[1] > 150, "\(marker)")
        #expect(opposite.allSatisfy { $0 < 40 }, "\(opposite)")
    }

    @Test func wholeMCUsDependOnTheSubsampling() {
        let s420 = Int32(TJSAMP_420.rawValue)
        let s422 = Int32(TJSAMP_422.rawValue)
        #expect(JPEGTransformer.isWholeMCUs(width: 1920, height: 1088, subsampling: s420))
        #expect(!JPEGTransformer.isWholeMCUs(width: 1920, height: 1080, subsampling: s420))
        #expect(JPEGTransformer.isWholeMCUs(width: 1920, height: 1080, subsampling: s422))
        #expect(JPEGTransformer.isWholeMCUs(width: 1280, height: 720, subsampling: s420))
    }
}
