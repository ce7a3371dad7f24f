import ShutterCamera

/// Why no frame could be handed out.
///
/// Typed down to the camera's own error, so the API maps each case to its status in one place
/// and nothing classifies failures by their text.
public enum CaptureError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The camera did not deliver a frame in time.
    case timedOut(milliseconds: Int)
    /// The camera named `camera` failed, or cannot be opened, with `error`.
    case cameraUnavailable(CameraError, camera: String)
    /// A frame could not be encoded as JPEG.
    case encodingFailed(JPEGError, camera: String)
    /// Capture is stopping.
    case stopped

    /// One sentence for people: `/healthz`'s reason, a 503's detail, a job's last failure.
    public var description: String {
        switch self {
        case .timedOut(let milliseconds): "the camera delivered no frame within \(milliseconds) ms"
        case .cameraUnavailable(let error, let camera): "camera \(camera): \(error)"
        case .encodingFailed(let error, let camera): "camera \(camera): JPEG encoding failed: \(error)"
        case .stopped: "capture is stopped"
        }
    }

    /// What the capture thread records when opening, reading or encoding fails with `error`.
    static func failure(_ error: any Error, camera: String) -> CaptureError {
        switch error {
        case let error as CameraError: .cameraUnavailable(error, camera: camera)
        case let error as JPEGError: .encodingFailed(error, camera: camera)
        case let error as CaptureError: error
        // `CameraSource` is not typed: a source throwing something else still fails as a camera.
        default: .cameraUnavailable(.unsupported(String(describing: error)), camera: camera)
        }
    }
}
