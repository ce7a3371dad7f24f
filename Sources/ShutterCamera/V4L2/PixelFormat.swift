import CV4L2

/// The V4L2 pixel formats `V4L2CameraSource` can turn into frames without a conversion library.
public enum PixelFormat: String, Sendable, CaseIterable, Codable {
    /// Motion JPEG (`MJPG`, or `JPEG` on some drivers): passed through as JPEG, never re-encoded.
    case mjpeg
    /// Packed Y'CbCr 4:2:2, `YUYV` (the one uncompressed format every UVC camera offers).
    case yuyv
    /// Y plane then interleaved CbCr at 4:2:0, `NV12`.
    case nv12
    /// Y, Cb and Cr planes at 4:2:0, `YU12` (`V4L2_PIX_FMT_YUV420`).
    case yuv420

    /// The fourcc codes that mean this format; the first is the one to ask for.
    public var fourccs: [UInt32] {
        switch self {
        // Documentation/userspace-api/media/v4l/pixfmt-compressed.rst: `JPEG` is the older
        // name some drivers still report for the same baseline JFIF stream as `MJPG`.
        case .mjpeg: [cv4l2_pix_fmt_mjpeg(), cv4l2_pix_fmt_jpeg()]
        case .yuyv: [cv4l2_pix_fmt_yuyv()]
        case .nv12: [cv4l2_pix_fmt_nv12()]
        case .yuv420: [cv4l2_pix_fmt_yuv420()]
        }
    }

    /// The format a fourcc code means, or nil if it is none of these.
    public init?(fourcc: UInt32) {
        guard let format = Self.allCases.first(where: { $0.fourccs.contains(fourcc) }) else { return nil }
        self = format
    }
}

/// Four-character codes, the way V4L2 names pixel formats (`v4l2_fourcc` in `<linux/videodev2.h>`).
public enum FourCC {
    /// The code for four ASCII characters such as `"MJPG"`, or nil if `text` is not four ASCII characters.
    public static func code(_ text: String) -> UInt32? {
        let bytes = Array(text.utf8)
        guard bytes.count == 4, bytes.allSatisfy({ $0 < 0x80 }) else { return nil }
        // v4l2_fourcc(a, b, c, d) puts `a` in the lowest byte.
        return bytes.reversed().reduce(0) { ($0 << 8) | UInt32($1) }
    }

    /// The four characters of `code`, `.` for any unprintable one, with `-BE` for big-endian variants.
    public static func string(_ code: UInt32) -> String {
        // V4L2_PIX_FMT_FLAG_BE_* formats set bit 31 on top of the little-endian code.
        let bigEndianFlag: UInt32 = 1 << 31
        let characters = (0..<4).map { shift -> Character in
            let byte = UInt8(truncatingIfNeeded: (code & ~bigEndianFlag) >> (8 * UInt32(shift)))
            return (0x20..<0x7F).contains(byte) ? Character(Unicode.Scalar(byte)) : "."
        }
        return String(characters) + (code & bigEndianFlag != 0 ? "-BE" : "")
    }
}
