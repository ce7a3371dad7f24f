/// A capture size and frame rate, as requested from or negotiated with a camera.
public struct CameraMode: Sendable, Equatable, Codable {
    /// Frame width in pixels.
    public var width: Int
    /// Frame height in pixels.
    public var height: Int
    /// Frames per second.
    public var fps: Int

    /// A mode of `width` x `height` pixels at `fps` frames per second.
    public init(width: Int, height: Int, fps: Int) {
        self.width = width
        self.height = height
        self.fps = fps
    }
}

extension CameraMode: CustomStringConvertible {
    /// `640x480@30`.
    public var description: String { "\(width)x\(height)@\(fps)" }
}
