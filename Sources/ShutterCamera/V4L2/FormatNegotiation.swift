/// Picks the pixel format, size and rate to ask a camera for: a pure function of what it offers.
public enum FormatNegotiation {
    /// What to set with `VIDIOC_S_FMT` and `VIDIOC_S_PARM`.
    public struct Choice: Sendable, Equatable {
        /// The format as Shutter handles it.
        public var pixelFormat: PixelFormat
        /// The exact fourcc the camera offered for it.
        public var fourcc: UInt32
        /// The size.
        public var size: FrameSize
        /// The interval to ask for.
        public var interval: FrameInterval
        /// Whether `size` is the requested size (otherwise it is the closest offered).
        public var isExactSize: Bool
    }

    /// The best of `offered` for `requested`.
    ///
    /// The size nearest the requested one wins (the exact size when offered; distance is
    /// |dw| + |dh|, the larger size on a tie); among formats at that size, one that reaches the
    /// requested rate beats one that does not; then `preference` order decides (MJPEG first:
    /// the camera's JPEG is passed through without decoding or re-encoding).
    /// Throws `CameraError.unsupported` naming what the camera offers when it offers none of `preference`.
    public static func choose(offered: [OfferedFormat], requested: CameraMode, preference: [PixelFormat])
        throws -> Choice
    {
        let wanted = FrameSize(width: requested.width, height: requested.height)
        typealias Key = (distance: Int, missesRate: Int, rank: Int, negativeArea: Int)
        var best: (key: Key, choice: Choice)?
        for format in offered {
            guard let pixelFormat = PixelFormat(fourcc: format.fourcc),
                let rank = preference.firstIndex(of: pixelFormat)
            else { continue }
            for offer in format.sizes {
                let distance = abs(offer.size.width - wanted.width) + abs(offer.size.height - wanted.height)
                // Half a frame per second of slack, so 30000/1001 counts as reaching 30.
                let reachesRate = offer.rates.maximumFPS.map { $0 + 0.5 >= Double(requested.fps) } ?? true
                let key: Key = (distance, reachesRate ? 0 : 1, rank, -offer.size.width * offer.size.height)
                if let current = best, !(key < current.key) { continue }
                best = (
                    key,
                    Choice(
                        pixelFormat: pixelFormat, fourcc: format.fourcc, size: offer.size,
                        interval: offer.rates.interval(closestTo: requested.fps), isExactSize: distance == 0)
                )
            }
        }
        guard let best else {
            let readable = preference.map { FourCC.string($0.fourccs[0]) }.joined(separator: ", ")
            let available =
                offered.isEmpty
                ? "nothing"
                : offered.map { "\(FourCC.string($0.fourcc)) (\($0.description))" }.joined(separator: ", ")
            throw CameraError.unsupported(
                "the camera offers none of the pixel formats Shutter reads (\(readable)); it offers \(available)"
            )
        }
        return best.choice
    }
}
