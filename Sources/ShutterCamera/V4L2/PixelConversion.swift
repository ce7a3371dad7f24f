import CShutterPixels

/// Rearranges uncompressed V4L2 frames into planar `YUVImage`s, sample for sample (no RGB
/// round trip, no colour maths), honouring the driver's line stride (`bytesperline`).
///
/// Layouts follow Documentation/userspace-api/media/v4l/pixfmt-packed-yuv.rst (YUYV) and
/// pixfmt-yuv-planar.rst (NV12, YU12). Each conversion writes into an existing image so that
/// the capture loop can reuse one buffer; it returns false, touching nothing, when `source`
/// is too short for the geometry.
public enum PixelConversion {
    /// Bytes a frame of `format` needs with this geometry, or nil if `bytesPerLine` is too small
    /// for `width` (MJPEG has no fixed size: nil).
    public static func requiredByteCount(for format: PixelFormat, width: Int, height: Int, bytesPerLine: Int)
        -> Int?
    {
        guard width > 0, height > 0 else { return nil }
        let chromaWidth = (width + 1) / 2
        let chromaHeight = (height + 1) / 2
        switch format {
        case .mjpeg:
            return nil
        case .yuyv:
            // Each 4-byte Y0 Cb Y1 Cr group covers two pixels.
            guard bytesPerLine >= chromaWidth * 4 else { return nil }
            return bytesPerLine * (height - 1) + chromaWidth * 4
        case .nv12:
            // The CbCr plane starts right after the luma plane and has the same stride.
            guard bytesPerLine >= chromaWidth * 2 else { return nil }
            return bytesPerLine * height + bytesPerLine * (chromaHeight - 1) + chromaWidth * 2
        case .yuv420:
            // Cb then Cr follow the luma plane, each with half the luma stride.
            let chromaStride = bytesPerLine / 2
            guard bytesPerLine >= width, chromaStride >= chromaWidth else { return nil }
            return bytesPerLine * height + chromaStride * chromaHeight + chromaStride * (chromaHeight - 1)
                + chromaWidth
        }
    }

    /// Packed YUYV 4:2:2 into a planar 4:2:2 `image` of the same size; with `fullRange`, the
    /// samples are expanded from BT.601 limited range to JFIF's full range in the same pass.
    ///
    /// This runs on every YUYV frame that is encoded: even widths go through a C kernel that
    /// clang vectorises (several times faster than the same loop in Swift).
    public static func convertYUYV(
        _ source: UnsafeRawBufferPointer, bytesPerLine: Int, into image: inout YUVImage,
        fullRange: Bool = false
    ) -> Bool {
        precondition(image.subsampling == .yuv422, "YUYV converts to a 4:2:2 image")
        let (width, height) = (image.width, image.height)
        guard
            let needed = requiredByteCount(
                for: .yuyv, width: width, height: height, bytesPerLine: bytesPerLine),
            source.count >= needed
        else { return false }
        let g = image.geometry
        image.isFullRange = fullRange
        // Odd widths (rare) take the scalar path below; even ones the vectorised C kernel.
        if width & 1 == 0 {
            image.bytes.withUnsafeMutableBufferPointer { planes in
                let y = planes.baseAddress!
                cshutter_yuyv_to_planar422(
                    source.baseAddress!.assumingMemoryBound(to: UInt8.self), bytesPerLine, Int32(width),
                    Int32(height), y, y + g.cbOffset, y + g.crOffset, fullRange ? 1 : 0)
            }
            return true
        }
        let pairs = width / 2
        let luma: (UInt8) -> UInt8 = { fullRange ? JPEGEncoder.fullRangeLuma($0) : $0 }
        let chroma: (UInt8) -> UInt8 = { fullRange ? JPEGEncoder.fullRangeChroma($0) : $0 }
        image.bytes.withUnsafeMutableBufferPointer { planes in
            let y = planes.baseAddress!
            let cb = y + g.cbOffset
            let cr = y + g.crOffset
            let input = source.baseAddress!.assumingMemoryBound(to: UInt8.self)
            for row in 0..<height {
                let line = input + row * bytesPerLine
                let lumaRow = y + row * width
                let chromaRow = row * g.chromaWidth
                for pair in 0..<pairs {
                    let group = line + pair * 4
                    lumaRow[2 * pair] = luma(group[0])
                    cb[chromaRow + pair] = chroma(group[1])
                    lumaRow[2 * pair + 1] = luma(group[2])
                    cr[chromaRow + pair] = chroma(group[3])
                }
                // An odd width's last group carries one real pixel; its Y1 is padding.
                let group = line + pairs * 4
                lumaRow[width - 1] = luma(group[0])
                cb[chromaRow + pairs] = chroma(group[1])
                cr[chromaRow + pairs] = chroma(group[3])
            }
        }
        return true
    }

    /// NV12 (Y plane, then interleaved CbCr at 4:2:0) into a planar 4:2:0 `image` of the same size.
    public static func convertNV12(
        _ source: UnsafeRawBufferPointer, bytesPerLine: Int, into image: inout YUVImage
    ) -> Bool {
        precondition(image.subsampling == .yuv420, "NV12 converts to a 4:2:0 image")
        let (width, height) = (image.width, image.height)
        guard
            let needed = requiredByteCount(
                for: .nv12, width: width, height: height, bytesPerLine: bytesPerLine),
            source.count >= needed
        else { return false }
        let g = image.geometry
        image.bytes.withUnsafeMutableBufferPointer { planes in
            let output = planes.baseAddress!
            let input = source.baseAddress!.assumingMemoryBound(to: UInt8.self)
            copyPlane(from: input, stride: bytesPerLine, to: output, width: width, height: height)
            let chroma = input + bytesPerLine * height
            let cb = output + g.cbOffset
            let cr = output + g.crOffset
            for row in 0..<g.chromaHeight {
                let line = chroma + row * bytesPerLine
                let out = row * g.chromaWidth
                for column in 0..<g.chromaWidth {
                    cb[out + column] = line[2 * column]
                    cr[out + column] = line[2 * column + 1]
                }
            }
        }
        return true
    }

    /// YU12 (Y, Cb and Cr planes at 4:2:0) into a planar 4:2:0 `image` of the same size.
    public static func convertYUV420(
        _ source: UnsafeRawBufferPointer, bytesPerLine: Int, into image: inout YUVImage
    ) -> Bool {
        precondition(image.subsampling == .yuv420, "YU12 converts to a 4:2:0 image")
        let (width, height) = (image.width, image.height)
        guard
            let needed = requiredByteCount(
                for: .yuv420, width: width, height: height, bytesPerLine: bytesPerLine),
            source.count >= needed
        else { return false }
        let g = image.geometry
        let chromaStride = bytesPerLine / 2
        image.bytes.withUnsafeMutableBufferPointer { planes in
            let output = planes.baseAddress!
            let input = source.baseAddress!.assumingMemoryBound(to: UInt8.self)
            copyPlane(from: input, stride: bytesPerLine, to: output, width: width, height: height)
            let cb = input + bytesPerLine * height
            let cr = cb + chromaStride * g.chromaHeight
            copyPlane(
                from: cb, stride: chromaStride, to: output + g.cbOffset, width: g.chromaWidth,
                height: g.chromaHeight)
            copyPlane(
                from: cr, stride: chromaStride, to: output + g.crOffset, width: g.chromaWidth,
                height: g.chromaHeight)
        }
        return true
    }

    /// Copies `height` rows of `width` bytes from a strided plane into a tightly packed one.
    private static func copyPlane(
        from source: UnsafePointer<UInt8>, stride: Int, to destination: UnsafeMutablePointer<UInt8>,
        width: Int,
        height: Int
    ) {
        if stride == width {
            destination.update(from: source, count: width * height)
            return
        }
        for row in 0..<height {
            (destination + row * width).update(from: source + row * stride, count: width)
        }
    }
}
