/// How the chroma planes of a `YUVImage` are subsampled relative to luma.
public enum ChromaSubsampling: Sendable {
    /// Chroma at half width and half height (the usual JPEG and video layout).
    case yuv420
    /// Chroma at half width and full height (what V4L2 YUYV cameras deliver).
    case yuv422
}

/// Planar Y'CbCr image in one contiguous buffer: Y plane, then Cb, then Cr, tightly packed (stride == plane width).
///
/// Samples are BT.601 limited range ("studio swing": Y' 16...235, Cb and Cr 16...240 around 128),
/// which is what V4L2 YUYV cameras deliver by default (kernel doc `colorspaces-defs`:
/// Y'CbCr encodings default to `V4L2_QUANTIZATION_LIM_RANGE`). `JPEGEncoder` expands them
/// to the full range that JFIF requires.
public struct YUVImage: Sendable {
    /// Luma width in pixels.
    public let width: Int
    /// Luma height in pixels.
    public let height: Int
    /// How the chroma planes are subsampled.
    public let subsampling: ChromaSubsampling
    /// The three planes, back to back; `byteCount(width:height:subsampling:)` bytes long.
    public var bytes: [UInt8]
    /// Whether the samples are already full range (JFIF's 0...255), as `PixelConversion` can
    /// produce in the same pass that converts them; `JPEGEncoder` then skips its expansion.
    public var isFullRange = false

    /// Limited-range black luma.
    public static let blackLuma: UInt8 = 16
    /// Limited-range white luma.
    public static let whiteLuma: UInt8 = 235
    /// Chroma of any grey.
    public static let neutralChroma: UInt8 = 128

    /// A black image (Y=16, Cb=Cr=128).
    public init(width: Int, height: Int, subsampling: ChromaSubsampling) {
        precondition(width > 0 && height > 0, "YUVImage size \(width)x\(height) must be positive")
        self.width = width
        self.height = height
        self.subsampling = subsampling
        let lumaCount = width * height
        var bytes = [UInt8](
            repeating: Self.neutralChroma,
            count: Self.byteCount(width: width, height: height, subsampling: subsampling))
        bytes.withUnsafeMutableBufferPointer { $0[0..<lumaCount].update(repeating: Self.blackLuma) }
        self.bytes = bytes
    }

    /// Wraps planes already laid out as this type describes; `bytes.count` must match.
    public init(width: Int, height: Int, subsampling: ChromaSubsampling, bytes: [UInt8]) {
        precondition(width > 0 && height > 0, "YUVImage size \(width)x\(height) must be positive")
        precondition(
            bytes.count == Self.byteCount(width: width, height: height, subsampling: subsampling),
            "YUVImage \(width)x\(height) \(subsampling) needs \(Self.byteCount(width: width, height: height, subsampling: subsampling)) bytes, got \(bytes.count)"
        )
        self.width = width
        self.height = height
        self.subsampling = subsampling
        self.bytes = bytes
    }

    /// Bytes needed for all three planes of an image of this size.
    public static func byteCount(width: Int, height: Int, subsampling: ChromaSubsampling) -> Int {
        let geometry = Geometry(width: width, height: height, subsampling: subsampling)
        return geometry.crOffset + geometry.chromaWidth * geometry.chromaHeight
    }

    /// Width of each chroma plane: half the luma width, rounded up.
    public var chromaWidth: Int { geometry.chromaWidth }
    /// Height of each chroma plane: half the luma height (4:2:0, rounded up) or all of it (4:2:2).
    public var chromaHeight: Int { geometry.chromaHeight }
    /// Offset of the Cb plane in `bytes` (the Y plane starts at 0).
    public var cbOffset: Int { geometry.cbOffset }
    /// Offset of the Cr plane in `bytes`.
    public var crOffset: Int { geometry.crOffset }

    /// The luma sample at (x, y).
    public func luma(x: Int, y: Int) -> UInt8 { bytes[y * width + x] }

    /// The Cb and Cr samples of the chroma cell covering luma pixel (x, y).
    public func chroma(x: Int, y: Int) -> (cb: UInt8, cr: UInt8) {
        let g = geometry
        let index = (y >> g.verticalShift) * g.chromaWidth + (x >> 1)
        return (bytes[g.cbOffset + index], bytes[g.crOffset + index])
    }

    /// Fills a rectangle, clipped to the image, with one colour.
    ///
    /// Every chroma sample that the rectangle touches takes the colour, so a rectangle
    /// with odd edges also tints half a pixel beside it.
    public mutating func fill(x: Int, y: Int, width: Int, height: Int, luma: UInt8, cb: UInt8, cr: UInt8) {
        let g = geometry
        bytes.withUnsafeMutableBufferPointer { buffer in
            g.fill(buffer.baseAddress!, x: x, y: y, width: width, height: height, luma: luma, cb: cb, cr: cr)
        }
    }

    /// Plane sizes and offsets of this image.
    var geometry: Geometry { Geometry(width: width, height: height, subsampling: subsampling) }

    /// Plane sizes and offsets, copied out of the image so that code holding a pointer
    /// into `bytes` (an exclusive access) can still read them.
    struct Geometry {
        /// Luma width.
        let width: Int
        /// Luma height.
        let height: Int
        /// Width of each chroma plane.
        let chromaWidth: Int
        /// Height of each chroma plane.
        let chromaHeight: Int
        /// Chroma row = luma row >> verticalShift.
        let verticalShift: Int
        /// Offset of the Cb plane.
        let cbOffset: Int
        /// Offset of the Cr plane.
        let crOffset: Int

        /// The geometry of a `width` x `height` image with `subsampling`.
        init(width: Int, height: Int, subsampling: ChromaSubsampling) {
            self.width = width
            self.height = height
            chromaWidth = (width + 1) / 2
            switch subsampling {
            case .yuv420:
                chromaHeight = (height + 1) / 2
                verticalShift = 1
            case .yuv422:
                chromaHeight = height
                verticalShift = 0
            }
            cbOffset = width * height
            crOffset = cbOffset + chromaWidth * chromaHeight
        }

        /// `YUVImage.fill` on a raw pointer to the planes.
        func fill(
            _ base: UnsafeMutablePointer<UInt8>, x: Int, y: Int, width w: Int, height h: Int, luma: UInt8,
            cb: UInt8, cr: UInt8
        ) {
            let x0 = max(x, 0)
            let y0 = max(y, 0)
            let x1 = min(x + w, width)
            let y1 = min(y + h, height)
            guard x0 < x1, y0 < y1 else { return }
            for row in y0..<y1 {
                (base + row * width + x0).update(repeating: luma, count: x1 - x0)
            }
            let cx0 = x0 >> 1
            let cx1 = (x1 + 1) >> 1
            let cy0 = y0 >> verticalShift
            let cy1 = (y1 + (1 << verticalShift) - 1) >> verticalShift
            for row in cy0..<cy1 {
                let offset = row * chromaWidth + cx0
                (base + cbOffset + offset).update(repeating: cb, count: cx1 - cx0)
                (base + crOffset + offset).update(repeating: cr, count: cx1 - cx0)
            }
        }
    }
}
