/// A V4L2 capture device as discovery reports it: what it is and every mode it offers.
public struct CameraDescription: Sendable, Equatable, Codable {
    /// The device node, such as `/dev/video0`.
    public var path: String
    /// The driver, such as `"uvcvideo"`.
    public var driver: String
    /// The camera's name, such as `"HD Pro Webcam C920"`.
    public var card: String
    /// Where it is attached, such as `"usb-0000:00:14.0-1"`.
    public var busInfo: String
    /// Every capture format, in the driver's order.
    public var formats: [FormatDescription]

    /// A description with every field given.
    public init(path: String, driver: String, card: String, busInfo: String, formats: [FormatDescription]) {
        self.path = path
        self.driver = driver
        self.card = card
        self.busInfo = busInfo
        self.formats = formats
    }
}

/// One pixel format of a `CameraDescription`.
public struct FormatDescription: Sendable, Equatable, Codable {
    /// The fourcc as text, such as `"MJPG"`.
    public var fourcc: String
    /// The driver's name for it, such as `"Motion-JPEG"`.
    public var description: String
    /// The sizes offered (for a stepwise range, its smallest and largest size).
    public var sizes: [SizeDescription]

    /// A format with every field given.
    public init(fourcc: String, description: String, sizes: [SizeDescription]) {
        self.fourcc = fourcc
        self.description = description
        self.sizes = sizes
    }

    /// The description of an offered format.
    public init(_ format: OfferedFormat) {
        self.init(
            fourcc: FourCC.string(format.fourcc), description: format.description,
            sizes: format.sizes.map {
                SizeDescription(width: $0.size.width, height: $0.size.height, fps: $0.rates.framesPerSecond)
            })
    }
}

/// One size of a `FormatDescription` and its frame rates.
public struct SizeDescription: Sendable, Equatable, Codable {
    /// Width in pixels.
    public var width: Int
    /// Height in pixels.
    public var height: Int
    /// Frames per second offered at this size, highest first (for a range, its two ends; empty if unknown).
    public var fps: [Double]

    /// A size with every field given.
    public init(width: Int, height: Int, fps: [Double]) {
        self.width = width
        self.height = height
        self.fps = fps
    }
}
