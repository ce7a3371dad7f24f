import CV4L2
import CV4LConvert

/// A libv4lconvert converter for one open camera: turns frames in a format Shutter does not read
/// itself (RGB24, Bayer, vendor formats) into planar 4:2:0 `YUVImage`s.
///
/// Its ioctls go through glibc (`cv4lconvert_glibc_dev_ops`), not libv4lconvert's raw syscalls,
/// so an LD_PRELOAD emulated camera sees them. Not Sendable: the capture thread owns it, from
/// `init` to `close`, and keeps the last image to convert into again once the consumer drops it.
final class V4LConverter {
    /// The camera's own format that the device is set to.
    private(set) var source = v4l2_format()
    /// The YU12 format frames are converted to.
    private(set) var destination = v4l2_format()
    private var handle: OpaquePointer?
    private var canvas: YUVImage?
    private let path: String

    /// A converter for the device open at `descriptor`; throws `CameraError.unsupported` when
    /// libv4lconvert cannot be set up for it.
    init(descriptor: Int32, path: String) throws {
        guard let handle = v4lconvert_create_with_dev_ops(descriptor, nil, cv4lconvert_glibc_dev_ops()) else {
            throw CameraError.unsupported("\(path): libv4lconvert could not be set up for the camera")
        }
        self.handle = handle
        self.path = path
    }

    deinit { close() }

    /// Frees libv4lconvert's state; later calls are no-ops. Call it before closing the device.
    func close() {
        guard let handle else { return }
        v4lconvert_destroy(handle)
        self.handle = nil
    }

    /// Asks libv4lconvert which camera format to capture for YU12 frames of about this size
    /// (`v4lconvert_try_format`, which also picks the closest size the camera offers).
    ///
    /// Returns the camera format to set with `VIDIOC_S_FMT`; throws `CameraError.unsupported`
    /// with libv4lconvert's message when nothing converts to YU12.
    func sourceFormat(width: Int, height: Int) throws -> (fourcc: UInt32, width: Int, height: Int) {
        guard let handle else { throw CameraError.unsupported("\(path): the converter is closed") }
        var wanted = Self.yu12Format(width: width, height: height)
        var source = v4l2_format()
        guard v4lconvert_try_format(handle, &wanted, &source) == 0,
            wanted.fmt.pix.pixelformat == cv4l2_pix_fmt_yuv420()
        else {
            throw CameraError.unsupported(
                "\(path): libv4lconvert cannot produce YU12: \(errorMessage(handle))")
        }
        return (source.fmt.pix.pixelformat, Int(source.fmt.pix.width), Int(source.fmt.pix.height))
    }

    /// Records the format the driver was set to (as `VIDIOC_G_FMT` reads it back); frames are
    /// converted to YU12 at the same size. Throws `CameraError.unsupported` for an odd size,
    /// which 4:2:0 chroma cannot cover the way `YUVImage` lays it out.
    func use(_ format: V4L2Device.ImageFormat) throws {
        guard format.width > 0, format.height > 0, format.width % 2 == 0, format.height % 2 == 0 else {
            throw CameraError.unsupported(
                "\(path): libv4lconvert cannot convert a \(format.width)x\(format.height) frame to 4:2:0")
        }
        source = v4l2_format()
        source.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        source.fmt.pix.pixelformat = format.fourcc
        source.fmt.pix.width = UInt32(format.width)
        source.fmt.pix.height = UInt32(format.height)
        source.fmt.pix.bytesperline = UInt32(format.bytesPerLine)
        source.fmt.pix.sizeimage = UInt32(format.sizeImage)
        source.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        destination = Self.yu12Format(width: format.width, height: format.height)
        canvas = nil
    }

    /// Converts one frame; a frame libv4lconvert rejects is `.corrupt` with its message.
    func convert(_ bytes: UnsafeRawBufferPointer) -> V4L2FrameDecoder.Outcome {
        guard let handle, let base = bytes.baseAddress else { return .corrupt("an empty frame") }
        let width = Int(destination.fmt.pix.width)
        let height = Int(destination.fmt.pix.height)
        if canvas == nil { canvas = YUVImage(width: width, height: height, subsampling: .yuv420) }
        let source = UnsafeMutablePointer(mutating: base.assumingMemoryBound(to: UInt8.self))
        let written = canvas!.bytes.withUnsafeMutableBufferPointer { output in
            v4lconvert_convert(
                handle, &self.source, &self.destination, source, Int32(clamping: bytes.count),
                output.baseAddress, Int32(clamping: output.count))
        }
        guard written == Int32(canvas!.bytes.count) else {
            return .corrupt("libv4lconvert: \(errorMessage(handle))")
        }
        return .image(.yuv(canvas!), width: width, height: height)
    }

    private func errorMessage(_ handle: OpaquePointer) -> String {
        guard let message = v4lconvert_get_error_message(handle), message.pointee != 0 else {
            return "no reason given"
        }
        return String(cString: message)
    }

    private static func yu12Format(width: Int, height: Int) -> v4l2_format {
        var format = v4l2_format()
        format.type = V4L2_BUF_TYPE_VIDEO_CAPTURE.rawValue
        format.fmt.pix.pixelformat = cv4l2_pix_fmt_yuv420()
        format.fmt.pix.width = UInt32(clamping: width)
        format.fmt.pix.height = UInt32(clamping: height)
        format.fmt.pix.field = V4L2_FIELD_NONE.rawValue
        format.fmt.pix.bytesperline = UInt32(clamping: width)
        format.fmt.pix.sizeimage = UInt32(clamping: width * height * 3 / 2)
        return format
    }

    /// The usual lower-case name of a camera format, as `pixelFormatName` shows it: `rgb24` for
    /// `RGB3`, else the fourcc itself in lower case.
    static func formatName(_ fourcc: UInt32) -> String {
        let names = ["RGB3": "rgb24", "BGR3": "bgr24", "RGB4": "rgb32", "BGR4": "bgr32", "RGBP": "rgb565"]
        let code = FourCC.string(fourcc)
        return names[code] ?? code.lowercased().trimmingSuffix(while: { $0 == " " })
    }
}

extension String {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> String {
        var text = self
        while let last = text.last, predicate(last) { text.removeLast() }
        return text
    }
}
