import ShutterCapture
import ShutterSystem

/// What the job runner needs of the camera: frames captured after a given instant, and the
/// camera kept open while any job is active. `CaptureService` is the real one; tests use a fake.
public protocol JobCamera: Sendable {
    /// The first frame captured at or after `instant`; throws `CaptureError` when there is none in time.
    func frame(capturedAtOrAfter instant: MonotonicInstant, timeoutMilliseconds: Int) async throws
        -> EncodedFrame
    /// Keeps the camera open (no idling) while `awake`.
    func keepAwake(_ awake: Bool)
    /// The camera's name, stored as each picture's source.
    var cameraName: String { get }
    /// The file to store for `frame`: its JPEG, with the burned-in text when pictures carry it
    /// (`label` and `jobID` fill its fields), and the EXIF block (time, camera, `label`).
    func storedPicture(of frame: EncodedFrame, label: String?, jobID: Int64?) throws -> [UInt8]
}

extension CaptureService: JobCamera {}
