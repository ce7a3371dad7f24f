import CTurboJPEG

/// Reads JPEG headers and decodes JPEGs, with a fresh TurboJPEG decompressor per call.
///
/// Used off the capture path (tests, thumbnails, checking uploads), so the cost of
/// creating a handle each time does not matter and there is no state to share.
public enum JPEGDecoder {
    /// The size and chroma subsampling of `jpeg` (nil subsampling: neither 4:2:0 nor 4:2:2).
    public static func header(of jpeg: [UInt8]) throws -> (
        width: Int, height: Int, subsampling: ChromaSubsampling?
    ) {
        let handle = try makeHandle()
        defer { tjDestroy(handle) }
        let header = try readHeader(jpeg, handle: handle)
        let subsampling: ChromaSubsampling? =
            switch header.subsampling {
            case Int32(TJSAMP_420.rawValue): .yuv420
            case Int32(TJSAMP_422.rawValue): .yuv422
            default: nil
            }
        return (header.width, header.height, subsampling)
    }

    /// Decodes `jpeg` to planar Y'CbCr in its own subsampling (full range, as JFIF stores it),
    /// for drawing on it without an RGB round trip. Throws for a subsampling other than 4:2:0
    /// and 4:2:2, which `YUVImage` does not have.
    public static func decodeYUV(_ jpeg: [UInt8]) throws -> YUVImage {
        try PlanarDecoder().decode(jpeg)
    }

    /// Decodes JPEGs to planar Y'CbCr with one decompressor kept for every call, for the
    /// capture thread's per-frame use (the static methods make one per call).
    ///
    /// Not Sendable: the handle belongs to one thread.
    public final class PlanarDecoder {
        private let handle: tjhandle

        /// A decoder with its own TurboJPEG decompressor.
        public init() throws {
            handle = try JPEGDecoder.makeHandle()
        }

        deinit {
            tjDestroy(handle)
        }

        /// `jpeg` as planar Y'CbCr (see `JPEGDecoder.decodeYUV`).
        public func decode(_ jpeg: [UInt8]) throws -> YUVImage {
            let header = try JPEGDecoder.readHeader(jpeg, handle: handle)
            let subsampling: ChromaSubsampling
            switch header.subsampling {
            case Int32(TJSAMP_420.rawValue): subsampling = .yuv420
            case Int32(TJSAMP_422.rawValue): subsampling = .yuv422
            default:
                throw JPEGError(
                    call: "JPEGDecoder.decodeYUV",
                    message: "subsampling \(header.subsampling) is not 4:2:0 or 4:2:2")
            }
            let g = YUVImage.Geometry(width: header.width, height: header.height, subsampling: subsampling)
            let byteCount = YUVImage.byteCount(
                width: header.width, height: header.height, subsampling: subsampling)
            var strides: [Int32] = [Int32(g.width), Int32(g.chromaWidth), Int32(g.chromaWidth)]
            var result: Int32 = 0
            // Every byte is written by the decode, so the planes need no filling first.
            let bytes = [UInt8](unsafeUninitializedCapacity: byteCount) { planes, initialized in
                var destinations: [UnsafeMutablePointer<UInt8>?] = [
                    planes.baseAddress, planes.baseAddress! + g.cbOffset, planes.baseAddress! + g.crOffset,
                ]
                result = jpeg.withUnsafeBufferPointer { source in
                    tjDecompressToYUVPlanes(
                        handle, source.baseAddress, UInt(source.count), &destinations, Int32(header.width),
                        &strides, Int32(header.height), 0)
                }
                if result != 0 { planes.initialize(repeating: 0) }
                initialized = byteCount
            }
            guard result == 0 else { throw JPEGError(call: "tjDecompressToYUVPlanes", handle: handle) }
            var image = YUVImage(
                width: header.width, height: header.height, subsampling: subsampling, bytes: bytes)
            image.isFullRange = true
            return image
        }
    }

    /// Decodes `jpeg` to packed RGB, 3 bytes per pixel, rows top to bottom.
    public static func decodeRGB(_ jpeg: [UInt8]) throws -> (width: Int, height: Int, pixels: [UInt8]) {
        let handle = try makeHandle()
        defer { tjDestroy(handle) }
        let header = try readHeader(jpeg, handle: handle)
        var pixels = [UInt8](repeating: 0, count: header.width * header.height * 3)
        let result = jpeg.withUnsafeBufferPointer { source in
            pixels.withUnsafeMutableBufferPointer { destination in
                tjDecompress2(
                    handle, source.baseAddress, UInt(source.count), destination.baseAddress,
                    Int32(header.width),
                    Int32(header.width * 3), Int32(header.height), Int32(TJPF_RGB.rawValue), 0)
            }
        }
        guard result == 0 else { throw JPEGError(call: "tjDecompress2", handle: handle) }
        return (header.width, header.height, pixels)
    }

    /// Decodes `jpeg` to packed RGB at the smallest TurboJPEG scale (n/8) at least `minimumWidth` wide.
    ///
    /// TurboJPEG scales inside the IDCT, so this is much cheaper than decoding at full size;
    /// the result is never narrower than `minimumWidth` unless the picture itself is.
    public static func decodeRGB(_ jpeg: [UInt8], minimumWidth: Int) throws -> (
        width: Int, height: Int, pixels: [UInt8]
    ) {
        let handle = try makeHandle()
        defer { tjDestroy(handle) }
        let header = try readHeader(jpeg, handle: handle)
        let scaled = scaledSize(width: header.width, height: header.height, minimumWidth: minimumWidth)
        var pixels = [UInt8](repeating: 0, count: scaled.width * scaled.height * 3)
        // tjDecompress2 picks the scaling factor that fits the requested width and height
        // (turbojpeg.h), so asking for the exact scaled size selects exactly that factor.
        let result = jpeg.withUnsafeBufferPointer { source in
            pixels.withUnsafeMutableBufferPointer { destination in
                tjDecompress2(
                    handle, source.baseAddress, UInt(source.count), destination.baseAddress,
                    Int32(scaled.width), Int32(scaled.width * 3), Int32(scaled.height),
                    Int32(TJPF_RGB.rawValue), 0)
            }
        }
        guard result == 0 else { throw JPEGError(call: "tjDecompress2", handle: handle) }
        return (scaled.width, scaled.height, pixels)
    }

    /// The size of a `width` x `height` picture at the smallest TurboJPEG scale at least `minimumWidth` wide.
    ///
    /// Full size if no smaller scale is wide enough.
    public static func scaledSize(width: Int, height: Int, minimumWidth: Int) -> (width: Int, height: Int) {
        var count: Int32 = 0
        guard let factors = tjGetScalingFactors(&count) else { return (width, height) }
        var best = (width: width, height: height)
        for factor in UnsafeBufferPointer(start: factors, count: Int(count)) {
            // TJSCALED (turbojpeg.h) rounds up; it is a macro Swift cannot import.
            let num = Int(factor.num)
            let denom = Int(factor.denom)
            let scaled = (
                width: (width * num + denom - 1) / denom, height: (height * num + denom - 1) / denom
            )
            if scaled.width >= minimumWidth, scaled.width < best.width { best = scaled }
        }
        return best
    }

    fileprivate static func makeHandle() throws -> tjhandle {
        guard let handle = tjInitDecompress() else { throw JPEGError(call: "tjInitDecompress", handle: nil) }
        return handle
    }

    /// The size and subsampling in `jpeg`'s header, read with `handle`.
    static func readHeader(_ jpeg: [UInt8], handle: tjhandle) throws -> (
        width: Int, height: Int, subsampling: Int32
    ) {
        guard !jpeg.isEmpty else { throw JPEGError(call: "tjDecompressHeader3", message: "empty input") }
        var width: Int32 = 0
        var height: Int32 = 0
        var subsampling: Int32 = 0
        var colorspace: Int32 = 0
        let result = jpeg.withUnsafeBufferPointer { source in
            tjDecompressHeader3(
                handle, source.baseAddress, UInt(source.count), &width, &height, &subsampling, &colorspace)
        }
        guard result == 0 else { throw JPEGError(call: "tjDecompressHeader3", handle: handle) }
        // An abbreviated "tables-only" stream (SOI, tables, EOI: no frame header) succeeds with no
        // size (libjpeg's JPEG_HEADER_TABLES_ONLY); it is no picture, so it is an error here.
        guard width > 0, height > 0 else {
            throw JPEGError(call: "tjDecompressHeader3", message: "no frame header: a tables-only JPEG")
        }
        // Every decode allocates its planes from the header's size before reading a byte of the
        // scan, so a forged header would ask for gigabytes: refused above any camera's size.
        guard Int(width) * Int(height) <= maximumPixels else {
            throw JPEGError(
                call: "tjDecompressHeader3",
                message: "\(width)x\(height) is over the \(maximumPixels / 1_000_000)-megapixel limit")
        }
        return (Int(width), Int(height), subsampling)
    }

    /// The most pixels a JPEG may have to be decoded: 8192x8192, above the largest camera
    /// sensors (64 megapixels) and at most 200 MB of RGB.
    public static let maximumPixels = 8192 * 8192
}
