/// Turns the bytes of one dequeued capture buffer into a frame image, or says why they are unusable.
///
/// No I/O: `V4L2CameraSource` hands it the mapped buffer, so the rules are tested with plain arrays.
/// Keeps the last YUV image and converts into it again once the consumer has dropped it,
/// so steady-state capture does not allocate a new frame buffer each time; or lends it to the
/// consumer (`lendCanvas`) and converts into it again once it comes back (`takeBackCanvas`).
struct V4L2FrameDecoder {
    /// The negotiated pixel format.
    let pixelFormat: PixelFormat
    /// The negotiated width in pixels.
    let width: Int
    /// The negotiated height in pixels.
    let height: Int
    /// The negotiated line stride of the first plane (`bytesperline`).
    let bytesPerLine: Int
    private var canvas: YUVImage?

    /// What one buffer held.
    enum Outcome {
        /// A usable picture of this size (an MJPEG frame's own size, which some cameras get wrong in `VIDIOC_G_FMT`).
        case image(RawImage, width: Int, height: Int)
        /// A broken or short frame, and why.
        case corrupt(String)
    }

    /// A decoder for frames of this negotiated format.
    init(pixelFormat: PixelFormat, width: Int, height: Int, bytesPerLine: Int) {
        self.pixelFormat = pixelFormat
        self.width = width
        self.height = height
        self.bytesPerLine = bytesPerLine
    }

    /// Decodes the `bytesused` bytes of a buffer; they are copied, so the buffer can be queued again at once.
    mutating func decode(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        switch pixelFormat {
        case .mjpeg:
            switch MJPEGRepair.validate(bytes) {
            case .failure(let defect):
                return .corrupt(defect.description)
            case .success(let layout):
                let size = layout.size ?? FrameSize(width: width, height: height)
                // The frame's own header sizes the picture (drivers misreport it), but a header
                // naming far more than the camera was set to is damage or a forgery: decoding
                // 65500x65500 for the text overlay would take 6 GB.
                guard size.width <= 2 * width, size.height <= 2 * height else {
                    return .corrupt(
                        "the frame header says \(size.width)x\(size.height), the camera was set to \(width)x\(height)"
                    )
                }
                let jpeg = MJPEGRepair.completeCopy(of: bytes, layout: layout)
                return .image(.jpeg(jpeg), width: size.width, height: size.height)
            }
        case .yuyv:
            // Range expansion happens in the same pass, so the encoder need not read the frame twice.
            return convert(bytes, subsampling: .yuv422) {
                PixelConversion.convertYUYV($0, bytesPerLine: $1, into: &$2, fullRange: true)
            }
        case .nv12:
            return convert(bytes, subsampling: .yuv420, with: PixelConversion.convertNV12)
        case .yuv420:
            return convert(bytes, subsampling: .yuv420, with: PixelConversion.convertYUV420)
        }
    }

    /// Drops the decoder's reference to the image it delivered last, so that image's holder is
    /// its only owner and may draw on it in place; false when there was none (MJPEG, or no frame
    /// yet). The next frame is converted into a new buffer unless `takeBackCanvas` came first.
    mutating func lendCanvas() -> Bool {
        guard canvas != nil else { return false }
        canvas = nil
        return true
    }

    /// Converts the next frames into `image`, lent by `lendCanvas`, when it still fits this
    /// format and no new canvas was made meanwhile. Every sample is converted again, so nothing
    /// drawn on it shows through.
    mutating func takeBackCanvas(_ image: consuming YUVImage) {
        guard canvas == nil, image.width == width, image.height == height,
            image.subsampling == (pixelFormat == .yuyv ? .yuv422 : .yuv420)
        else { return }
        canvas = image
    }

    private mutating func convert(
        _ bytes: UnsafeRawBufferPointer, subsampling: ChromaSubsampling,
        with conversion: (UnsafeRawBufferPointer, Int, inout YUVImage) -> Bool
    ) -> Outcome {
        if canvas == nil { canvas = YUVImage(width: width, height: height, subsampling: subsampling) }
        guard conversion(bytes, bytesPerLine, &canvas!) else {
            let needed =
                PixelConversion.requiredByteCount(
                    for: pixelFormat, width: width, height: height, bytesPerLine: bytesPerLine) ?? 0
            return .corrupt("\(bytes.count) bytes where a \(width)x\(height) frame needs \(needed)")
        }
        return .image(.yuv(canvas!), width: width, height: height)
    }
}
