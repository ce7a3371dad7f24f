import CTurboJPEG

/// Compresses `YUVImage`s to baseline JPEG with one reused TurboJPEG compressor.
///
/// Not Sendable: the handle and buffers belong to one thread (the capture thread).
public final class JPEGEncoder {
    /// JPEG quality, 1 (smallest) to 100 (best); `encode` throws if it is outside that range.
    public var quality: Int

    private let handle: tjhandle
    // Worst-case sized output for the largest image seen, reused with TJFLAG_NOREALLOC
    // so steady-state encoding allocates only the returned array.
    private var output: UnsafeMutablePointer<UInt8>?
    private var outputCapacity: UInt = 0
    // The full-range copy of the planes that TurboJPEG reads.
    private var fullRange: UnsafeMutablePointer<UInt8>?
    private var fullRangeCapacity = 0

    /// A compressor producing `quality` (1...100) JPEGs.
    public init(quality: Int) throws {
        try Self.validate(quality: quality)
        guard let handle = tjInitCompress() else { throw JPEGError(call: "tjInitCompress", handle: nil) }
        self.handle = handle
        self.quality = quality
    }

    deinit {
        if let output { tjFree(output) }
        fullRange?.deallocate()
        tjDestroy(handle)
    }

    /// Compresses `image` (BT.601 limited range, 4:2:0 or 4:2:2) to a JPEG file with the same subsampling.
    public func encode(_ image: YUVImage) throws -> [UInt8] {
        try encode(image, drawing: nil)
    }

    /// Compresses `image` with `drawing` done on the full-range planes first, in the encoder's
    /// own reused buffer: the frame is copied there (or expanded into it, which copies anyway),
    /// never copied on write, so drawing on a frame its source still holds costs one `memcpy`
    /// into memory already mapped, not a new 1.8 MB array per frame.
    public func encode(_ image: YUVImage, drawing: ((UnsafeMutablePointer<UInt8>) -> Void)?) throws -> [UInt8]
    {
        try Self.validate(quality: quality)
        let g = image.geometry
        let byteCount = g.crOffset + g.chromaWidth * g.chromaHeight
        guard image.bytes.count == byteCount else {
            throw JPEGError(
                call: "JPEGEncoder.encode",
                message:
                    "\(image.width)x\(image.height) image has \(image.bytes.count) bytes, needs \(byteCount)")
        }
        guard let width = Int32(exactly: image.width), let height = Int32(exactly: image.height) else {
            throw JPEGError(
                call: "JPEGEncoder.encode", message: "\(image.width)x\(image.height) is too large")
        }
        let subsampling = Int32(image.subsampling == .yuv420 ? TJSAMP_420.rawValue : TJSAMP_422.rawValue)

        let needed = tjBufSize(width, height, subsampling)
        guard needed != UInt.max else { throw JPEGError(call: "tjBufSize", handle: nil) }
        guard let neededBytes = Int32(exactly: needed) else {
            throw JPEGError(call: "tjAlloc", message: "\(needed) bytes is more than tjAlloc can take")
        }
        if needed > outputCapacity {
            if let output { tjFree(output) }
            output = nil
            outputCapacity = 0
            guard let buffer = tjAlloc(neededBytes) else {
                throw JPEGError(call: "tjAlloc", message: "cannot allocate \(needed) bytes")
            }
            output = buffer
            outputCapacity = needed
        }
        if let drawing {
            let planes =
                image.isFullRange
                ? copyToFullRangeBuffer(image, byteCount: byteCount)
                : expandToFullRange(image, byteCount: byteCount)
            drawing(planes)
            return try compress(planes, image: image, width: width, height: height, subsampling: subsampling)
        }
        if image.isFullRange {
            return try image.bytes.withUnsafeBufferPointer { source in
                try compress(
                    UnsafeMutablePointer(mutating: source.baseAddress!), image: image, width: width,
                    height: height,
                    subsampling: subsampling)
            }
        }
        return try compress(
            expandToFullRange(image, byteCount: byteCount), image: image, width: width, height: height,
            subsampling: subsampling)
    }

    /// Compresses packed RGB (3 bytes per pixel, rows top to bottom) to a 4:2:0 JPEG.
    public func encodeRGB(_ pixels: [UInt8], width: Int, height: Int) throws -> [UInt8] {
        try Self.validate(quality: quality)
        guard width > 0, height > 0, pixels.count == width * height * 3,
            let width32 = Int32(exactly: width), let height32 = Int32(exactly: height)
        else {
            throw JPEGError(
                call: "JPEGEncoder.encodeRGB",
                message: "\(width)x\(height) RGB image cannot have \(pixels.count) bytes")
        }
        // Thumbnails are small and rare, so TurboJPEG allocates the output each time
        // instead of sharing the capture path's reused buffer.
        var jpegBuffer: UnsafeMutablePointer<UInt8>?
        var jpegSize: UInt = 0
        defer { if let jpegBuffer { tjFree(jpegBuffer) } }
        let result = pixels.withUnsafeBufferPointer { source in
            tjCompress2(
                handle, source.baseAddress, width32, width32 * 3, height32, Int32(TJPF_RGB.rawValue),
                &jpegBuffer, &jpegSize, Int32(TJSAMP_420.rawValue), Int32(quality), 0)
        }
        guard result == 0, let jpegBuffer else { throw JPEGError(call: "tjCompress2", handle: handle) }
        return Array(UnsafeBufferPointer(start: jpegBuffer, count: Int(jpegSize)))
    }

    private func compress(
        _ planes: UnsafeMutablePointer<UInt8>, image: YUVImage, width: Int32, height: Int32,
        subsampling: Int32
    ) throws -> [UInt8] {
        let g = image.geometry

        // TurboJPEG already uses the fast integer DCT below quality 96 and the accurate one
        // from 96 up, where the fast one's error would show (turbojpeg.c setCompDefaults):
        // the right trade for a camera stream, so TJFLAG_FASTDCT would change nothing.
        // TJFLAG_NOREALLOC is safe because `output` holds tjBufSize bytes, the worst case.
        let flags = TJFLAG_NOREALLOC
        var jpegBuffer = output
        var jpegSize = outputCapacity
        var sources: [UnsafePointer<UInt8>?] = [
            UnsafePointer(planes), UnsafePointer(planes + g.cbOffset), UnsafePointer(planes + g.crOffset),
        ]
        let strides: [Int32] = [width, Int32(g.chromaWidth), Int32(g.chromaWidth)]
        let result = tjCompressFromYUVPlanes(
            handle, &sources, width, strides, height, subsampling, &jpegBuffer, &jpegSize, Int32(quality),
            flags)
        guard result == 0, let jpegBuffer else {
            throw JPEGError(call: "tjCompressFromYUVPlanes", handle: handle)
        }
        return Array(UnsafeBufferPointer(start: jpegBuffer, count: Int(jpegSize)))
    }

    /// Copies `image` into the reused full-range buffer and returns it.
    ///
    /// The planes stay contiguous, as in `YUVImage`: for odd sizes TurboJPEG rounds the luma
    /// plane up to whole chroma samples, and those extra reads land in the next plane
    /// rather than past the buffer.
    private func expandToFullRange(_ image: YUVImage, byteCount: Int) -> UnsafeMutablePointer<UInt8> {
        let destination = fullRangeBuffer(byteCount: byteCount)
        let lumaCount = image.geometry.cbOffset
        image.bytes.withUnsafeBufferPointer { source in
            let source = source.baseAddress!
            for i in 0..<lumaCount { destination[i] = Self.fullRangeLuma(source[i]) }
            for i in lumaCount..<byteCount { destination[i] = Self.fullRangeChroma(source[i]) }
        }
        return destination
    }

    /// Copies `image`, already full range, into the reused buffer and returns it.
    private func copyToFullRangeBuffer(_ image: YUVImage, byteCount: Int) -> UnsafeMutablePointer<UInt8> {
        let destination = fullRangeBuffer(byteCount: byteCount)
        image.bytes.withUnsafeBufferPointer { destination.update(from: $0.baseAddress!, count: byteCount) }
        return destination
    }

    /// The reused full-range buffer, at least `byteCount` long.
    private func fullRangeBuffer(byteCount: Int) -> UnsafeMutablePointer<UInt8> {
        if byteCount > fullRangeCapacity {
            fullRange?.deallocate()
            fullRange = .allocate(capacity: byteCount)
            fullRangeCapacity = byteCount
        }
        return fullRange!
    }

    // JFIF (ITU-T T.871 section 7) stores full-range Y'CbCr, 0...255, and every decoder reads
    // it that way; BT.601 limited range puts black..white at 16...235 and chroma at 16...240
    // (ITU-R BT.601-7 section 2.5.3). Stretching keeps black black instead of dark grey.
    // Fixed point with 14 fractional bits rather than a lookup table, because these loops
    // vectorise (about 3x faster at 1280x720): 19077 / 2^14 is 255/219 and 18652 / 2^14 is
    // 255/224, chosen so every input gives the same byte as rounding the exact ratio.

    /// Limited-range luma (16...235) stretched to full range (0...255).
    @inline(__always)
    static func fullRangeLuma(_ value: UInt8) -> UInt8 {
        UInt8(clamping: ((Int32(value) &- 16) &* 19077 &+ 8192) >> 14)
    }

    /// Limited-range chroma (16...240 around 128) stretched to full range (0...255 around 128).
    @inline(__always)
    static func fullRangeChroma(_ value: UInt8) -> UInt8 {
        UInt8(clamping: (((Int32(value) &- 128) &* 18652 &+ 8192) >> 14) &+ 128)
    }

    private static func validate(quality: Int) throws {
        guard (1...100).contains(quality) else {
            throw JPEGError(call: "JPEGEncoder", message: "quality \(quality) is outside 1...100")
        }
    }
}
