import ShutterCamera

/// A snapshot of the camera for `/status` and `/healthz`.
public struct CameraStatus: Sendable {
    public var name: String
    public var mode: CameraMode
    /// The pixel format the camera delivers (`mjpeg` is stored as sent; the others are encoded).
    public var pixelFormat: String
    public var framesCaptured: UInt64
    public var framesEncoded: UInt64
    public var reopens: UInt64
    public var corruptFrames: UInt64
    public var warmupFramesDropped: UInt64
    /// Nil while frames flow; otherwise why they do not.
    public var failure: CaptureError?
    /// What the capture thread is doing.
    public var phase: CapturePhase

    /// Whether the camera is closed because nobody needs it (`idle_after_s`).
    public var isIdle: Bool { phase == .idle }
}

/// What the capture thread is doing.
public enum CapturePhase: Sendable, Equatable {
    /// Not started, or opening the camera.
    case opening
    /// Reading frames.
    case streaming
    /// The camera failed; waiting to reopen it.
    case failed
    /// The camera is closed because nobody needs it, until someone does.
    case idle
    /// The capture thread has ended.
    case stopped
}
