/// A pixel format a camera offers, with the sizes and rates to negotiate from.
public struct OfferedFormat: Sendable, Equatable {
    /// The V4L2 fourcc code.
    public var fourcc: UInt32
    /// The driver's name for it, such as `"Motion-JPEG"`.
    public var description: String
    /// Each size, with its rates.
    public var sizes: [OfferedSize]

    /// A format with every field given.
    public init(fourcc: UInt32, description: String, sizes: [OfferedSize]) {
        self.fourcc = fourcc
        self.description = description
        self.sizes = sizes
    }
}

/// One size of an `OfferedFormat` and the rates offered at it.
public struct OfferedSize: Sendable, Equatable {
    /// The size.
    public var size: FrameSize
    /// The rates at this size.
    public var rates: FrameRates

    /// A size with its rates.
    public init(size: FrameSize, rates: FrameRates) {
        self.size = size
        self.rates = rates
    }
}
