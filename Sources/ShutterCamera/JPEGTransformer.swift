import CTurboJPEG

/// Turns camera JPEGs by an `Orientation`: losslessly in the DCT domain with `tjTransform`
/// when the picture is whole MCUs, else by decode, turn, encode.
///
/// Lossless transforms move whole MCU blocks (8 or 16 pixels a side by subsampling); a partial
/// block at the right or bottom edge cannot move, and `TJXOPT_TRIM` would cut it off (1080 rows
/// of 4:2:0 lose 8). Trimming loses picture, so this asks for `TJXOPT_PERFECT` and, when the
/// transform is not perfect, decodes (to RGB), turns and re-encodes at the configured quality
/// instead: every row is kept, at the cost of one generation of JPEG loss and the CPU of a
/// decode and encode on those frames. A capture size of whole MCUs (1920x1088, 1280x720) stays
/// lossless.
///
/// Not Sendable: the handle belongs to one thread (the capture thread).
public final class JPEGTransformer {
    /// The orientation applied; never the identity.
    public let orientation: Orientation
    private let handle: tjhandle
    /// Frames turned by decode-turn-encode because their size is not whole MCUs.
    public private(set) var reencodedFrames: UInt64 = 0

    /// A transformer for `orientation`.
    public init(orientation: Orientation) throws {
        guard let handle = tjInitTransform() else { throw JPEGError(call: "tjInitTransform", handle: nil) }
        self.orientation = orientation
        self.handle = handle
    }

    deinit {
        tjDestroy(handle)
    }

    /// `jpeg` turned, with its new size; `encoder` re-encodes it when it is not whole MCUs.
    public func transform(_ jpeg: [UInt8], encoder: JPEGEncoder) throws -> (
        jpeg: [UInt8], width: Int, height: Int
    ) {
        if let turned = try lossless(jpeg) { return turned }
        reencodedFrames += 1
        let decoded = try JPEGDecoder.decodeRGB(jpeg)
        let (width, height) = orientation.size(width: decoded.width, height: decoded.height)
        let pixels = orientation.apply(toRGB: decoded.pixels, width: decoded.width, height: decoded.height)
        return (try encoder.encodeRGB(pixels, width: width, height: height), width, height)
    }

    /// The lossless transform, or nil when the picture has partial MCU blocks.
    func lossless(_ jpeg: [UInt8]) throws -> (jpeg: [UInt8], width: Int, height: Int)? {
        guard !jpeg.isEmpty else { throw JPEGError(call: "tjTransform", message: "empty input") }
        let header = try JPEGDecoder.readHeader(jpeg, handle: handle)
        let (width, height, subsampling) = (Int32(header.width), Int32(header.height), header.subsampling)
        guard Self.isWholeMCUs(width: Int(width), height: Int(height), subsampling: subsampling) else {
            return nil
        }
        var transform = tjtransform()
        transform.op = orientation.turboJPEGOperation
        // Never trim: a size that is not whole MCUs was sent to the re-encode above.
        transform.options = TJXOPT_PERFECT
        var output: UnsafeMutablePointer<UInt8>?
        var outputSize: UInt = 0
        defer { if let output { tjFree(output) } }
        let result = jpeg.withUnsafeBufferPointer { source in
            tjTransform(
                handle, source.baseAddress, UInt(source.count), 1, &output, &outputSize, &transform, 0)
        }
        guard result == 0, let output else { throw JPEGError(call: "tjTransform", handle: handle) }
        let (turnedWidth, turnedHeight) = orientation.size(width: Int(width), height: Int(height))
        return (Array(UnsafeBufferPointer(start: output, count: Int(outputSize))), turnedWidth, turnedHeight)
    }

    /// Whether a picture of this size and subsampling is whole MCUs, which every lossless
    /// transform needs to keep every pixel (turbojpeg.h, `TJXOPT_PERFECT`; MCU sizes from
    /// `tjMCUWidth`/`tjMCUHeight`: 8x8 for 4:4:4 and grey, 16x8 for 4:2:2, 16x16 for 4:2:0,
    /// 8x16 for 4:4:0, 32x8 for 4:1:1).
    static func isWholeMCUs(width: Int, height: Int, subsampling: Int32) -> Bool {
        let (mcuWidth, mcuHeight) =
            switch subsampling {
            case Int32(TJSAMP_422.rawValue): (16, 8)
            case Int32(TJSAMP_420.rawValue): (16, 16)
            case Int32(TJSAMP_440.rawValue): (8, 16)
            case Int32(TJSAMP_411.rawValue): (32, 8)
            default: (8, 8)
            }
        return width % mcuWidth == 0 && height % mcuHeight == 0
    }
}
