/// A frame size in pixels.
public struct FrameSize: Sendable, Hashable, Codable, CustomStringConvertible {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int

    /// A `width` x `height` size.
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }

    /// `640x480`.
    public var description: String { "\(width)x\(height)" }
}

/// The frame sizes a camera offers at one pixel format (`VIDIOC_ENUM_FRAMESIZES`).
public enum FrameSizes: Sendable, Equatable {
    /// A list of exact sizes (what UVC cameras report); empty when the driver does not enumerate sizes.
    case discrete([FrameSize])
    /// Any size from `minimum` to `maximum` in steps (`V4L2_FRMSIZE_TYPE_STEPWISE`, or
    /// `_CONTINUOUS` with steps of 1).
    case stepwise(minimum: FrameSize, maximum: FrameSize, stepWidth: Int, stepHeight: Int)

    /// The sizes worth trying for `requested`: every discrete size; for a range, `requested`
    /// fitted to it and the two bounds; with nothing enumerated, `requested` as is, since
    /// `VIDIOC_S_FMT` adjusts it to what the driver can do.
    public func candidates(near requested: FrameSize?) -> [FrameSize] {
        switch self {
        case .discrete(let sizes):
            if sizes.isEmpty, let requested { return [requested] }
            return sizes
        case .stepwise(let minimum, let maximum, let stepWidth, let stepHeight):
            var sizes = [minimum]
            if let requested {
                sizes.append(
                    FrameSize(
                        width: Self.fit(requested.width, minimum.width, maximum.width, stepWidth),
                        height: Self.fit(requested.height, minimum.height, maximum.height, stepHeight)))
            }
            sizes.append(maximum)
            var seen = Set<FrameSize>()
            return sizes.filter { seen.insert($0).inserted }
        }
    }

    /// `value` clamped to `low...high` and rounded to the nearest step above `low`.
    private static func fit(_ value: Int, _ low: Int, _ high: Int, _ step: Int) -> Int {
        let clamped = min(max(value, low), high)
        guard step > 1 else { return clamped }
        let steps = (clamped - low + step / 2) / step
        return min(low + steps * step, high)
    }
}
