import CShutterPixels
import CTurboJPEG

/// How pictures are turned before they are encoded or passed on: `--rotate` clockwise by a
/// quarter turn, then `--flip`. The identity (the default) is never applied, so it costs nothing.
///
/// Every one of the eight results is a walk over the source that may swap the axes and mirror
/// either of them: output (x, y) reads source (x0, y0) = swapped ? (y, x) : (x, y), then
/// `width - 1 - x0` if `mirrorsX`, `height - 1 - y0` if `mirrorsY`. The same eight are
/// TurboJPEG's lossless transforms, so a JPEG turns without a decode.
public struct Orientation: Sendable, Equatable, CustomStringConvertible {
    /// Mirror the picture.
    public enum Flip: String, Sendable, CaseIterable {
        case none, horizontal, vertical
    }

    /// Degrees clockwise: 0, 90, 180 or 270.
    public let rotation: Int
    /// Applied after the rotation.
    public let flip: Flip
    /// Whether output rows come from source columns (a quarter turn).
    let swapsAxes: Bool
    /// Whether output x runs against source x (after any swap).
    let mirrorsX: Bool
    /// Whether output y runs against source y (after any swap).
    let mirrorsY: Bool

    /// Neither turned nor mirrored.
    public static let identity = Orientation(validRotation: 0, flip: .none)

    /// Nil unless `rotation` is 0, 90, 180 or 270.
    public init?(rotation: Int, flip: Flip) {
        guard [0, 90, 180, 270].contains(rotation) else { return nil }
        self.init(validRotation: rotation, flip: flip)
    }

    private init(validRotation rotation: Int, flip: Flip) {
        self.rotation = rotation
        self.flip = flip
        // The rotation alone: 90 reads source (y, H-1-x), 180 (W-1-x, H-1-y), 270 (W-1-y, x).
        var swaps = false
        var mirrorsX = false
        var mirrorsY = false
        switch rotation {
        case 90: (swaps, mirrorsY) = (true, true)
        case 180: (mirrorsX, mirrorsY) = (true, true)
        case 270: (swaps, mirrorsX) = (true, true)
        default: break
        }
        // A flip mirrors the turned picture's x or y, which is the source's y or x once swapped.
        switch flip {
        case .none: break
        case .horizontal: if swaps { mirrorsY.toggle() } else { mirrorsX.toggle() }
        case .vertical: if swaps { mirrorsX.toggle() } else { mirrorsY.toggle() }
        }
        swapsAxes = swaps
        self.mirrorsX = mirrorsX
        self.mirrorsY = mirrorsY
    }

    /// Whether this changes nothing.
    public var isIdentity: Bool { !swapsAxes && !mirrorsX && !mirrorsY }

    public var description: String { "rotate \(rotation), flip \(flip.rawValue)" }

    /// The size of a `width` x `height` picture once turned.
    public func size(width: Int, height: Int) -> (width: Int, height: Int) {
        swapsAxes ? (height, width) : (width, height)
    }

    /// The mode with its size turned (for `/status` and the records).
    public func mode(_ mode: CameraMode) -> CameraMode {
        var turned = mode
        (turned.width, turned.height) = size(width: mode.width, height: mode.height)
        return turned
    }

    /// TurboJPEG's lossless transform that does the same (turbojpeg.h, `TJXOP`).
    var turboJPEGOperation: Int32 {
        let operation: TJXOP =
            switch (swapsAxes, mirrorsX, mirrorsY) {
            case (false, false, false): TJXOP_NONE
            case (false, true, false): TJXOP_HFLIP
            case (false, false, true): TJXOP_VFLIP
            case (false, true, true): TJXOP_ROT180
            case (true, false, false): TJXOP_TRANSPOSE
            case (true, false, true): TJXOP_ROT90
            case (true, true, false): TJXOP_ROT270
            case (true, true, true): TJXOP_TRANSVERSE
            }
        return Int32(operation.rawValue)
    }

    /// The walk over a `width` x `height` source plane that produces its turned plane, read
    /// every `xScale`-th output column (2 to halve a plane's width in the same pass).
    func walk(width: Int, height: Int, xScale: Int = 1) -> (start: Int, stepX: Int, stepY: Int) {
        func index(_ x: Int, _ y: Int) -> Int {
            var (x0, y0) = swapsAxes ? (y, x) : (x, y)
            if mirrorsX { x0 = width - 1 - x0 }
            if mirrorsY { y0 = height - 1 - y0 }
            return y0 * width + x0
        }
        let start = index(0, 0)
        return (start, index(xScale, 0) - start, index(0, 1) - start)
    }

    /// `image` turned. 4:2:0 stays 4:2:0; 4:2:2 turned a quarter becomes 4:2:0 (its chroma,
    /// half width and full height, would otherwise be full width and half height, a layout
    /// `YUVImage` and the encoder's planes do not have): every other chroma row is kept.
    public func apply(to image: YUVImage) -> YUVImage {
        if isIdentity { return image }
        let (width, height) = size(width: image.width, height: image.height)
        let subsampling: ChromaSubsampling = swapsAxes ? .yuv420 : image.subsampling
        var turned = YUVImage(
            width: width, height: height, subsampling: subsampling,
            bytes: [UInt8](
                repeating: 0,
                count: YUVImage.byteCount(width: width, height: height, subsampling: subsampling)))
        turned.isFullRange = image.isFullRange
        let source = image.geometry
        let target = turned.geometry
        let halvesChroma = swapsAxes && image.subsampling == .yuv422
        image.bytes.withUnsafeBufferPointer { input in
            turned.bytes.withUnsafeMutableBufferPointer { output in
                let input = input.baseAddress!
                let output = output.baseAddress!
                let luma = walk(width: source.width, height: source.height)
                cshutter_plane_transform(
                    input, luma.start, luma.stepX, luma.stepY, output, Int32(width), Int32(height), 1)
                let chroma = walk(
                    width: source.chromaWidth, height: source.chromaHeight, xScale: halvesChroma ? 2 : 1)
                for (from, to) in [(source.cbOffset, target.cbOffset), (source.crOffset, target.crOffset)] {
                    cshutter_plane_transform(
                        input + from, chroma.start, chroma.stepX, chroma.stepY, output + to,
                        Int32(target.chromaWidth), Int32(target.chromaHeight), 1)
                }
            }
        }
        return turned
    }

    /// Packed RGB (3 bytes a pixel) turned, for the decode-turn-encode path.
    func apply(toRGB pixels: [UInt8], width: Int, height: Int) -> [UInt8] {
        let (turnedWidth, turnedHeight) = size(width: width, height: height)
        var turned = [UInt8](repeating: 0, count: pixels.count)
        let step = walk(width: width, height: height)
        pixels.withUnsafeBufferPointer { input in
            turned.withUnsafeMutableBufferPointer { output in
                cshutter_plane_transform(
                    input.baseAddress!, step.start, step.stepX, step.stepY, output.baseAddress!,
                    Int32(turnedWidth), Int32(turnedHeight), 3)
            }
        }
        return turned
    }
}
