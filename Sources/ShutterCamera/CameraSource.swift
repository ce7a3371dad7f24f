import ShutterSystem

/// A camera: opened by `start`, read by one capture thread with the blocking `nextFrame`.
///
/// Implementations are owned by that one thread; none of the methods may be called
/// concurrently, except `interruptWait`, which any thread may call at any time.
public protocol CameraSource: AnyObject {
    /// A name for logs and the API, such as `"test-pattern"` or the V4L2 card name.
    var name: String { get }
    /// Who makes the frames, for the pictures' EXIF `Make`: the V4L2 driver (`uvcvideo`), or
    /// `Shutter` for a source that renders its own.
    var driverName: String { get }
    /// The negotiated size and rate; valid after `start()`.
    var mode: CameraMode { get }
    /// The pixel format frames arrive in, such as `"mjpeg"` or `"yuyv"`; valid after `start()`.
    var pixelFormatName: String { get }
    /// Opens the camera and starts capturing.
    func start() throws
    /// Stops capturing and releases the camera; `nextFrame` throws `CameraError.stopped` afterwards.
    func stop()
    /// Blocks until the next frame is captured.
    func nextFrame() throws -> RawFrame
    /// Makes a `nextFrame` blocked on the owning thread return soon (with a frame or an error),
    /// so capture can stop without waiting for the camera; safe from any thread.
    ///
    /// A source whose wait is short anyway (a V4L2 poll ends within its frame timeout) need not
    /// implement it.
    func interruptWait()
}

/// Why a camera could not deliver a frame.
public enum CameraError: Error, CustomStringConvertible, Equatable, Sendable {
    /// `nextFrame` was called before `start`.
    case notStarted
    /// `nextFrame` was called after `stop`.
    case stopped
    /// A system call on the device failed.
    case device(SystemError)
    /// The camera cannot do what was asked, such as a mode or pixel format it lacks.
    case unsupported(String)
    /// No frame arrived in time although the camera is streaming; restarting it often helps.
    case stalled(String)
    /// The camera went away (unplugged, or its node no longer exists).
    case disconnected(String)
    /// The device node at this path may not be opened by this user; the message says how to fix it.
    case permissionDenied(String, message: String)
    /// The device at this path is held by another program.
    case busy(String, String)
    /// A control name or value was refused; the message names the control and what it accepts.
    case invalidControl(String)

    /// A short phrase for logs.
    public var description: String {
        switch self {
        case .notStarted: "camera not started"
        case .stopped: "camera stopped"
        case .device(let error): "camera device: \(error)"
        case .unsupported(let what): "camera unsupported: \(what)"
        case .stalled(let what): "camera stalled: \(what)"
        case .disconnected(let what): "camera disconnected: \(what)"
        case .permissionDenied(let path, let message): "camera \(path): permission denied: \(message)"
        case .busy(let path, let message): "camera \(path) is busy: \(message)"
        case .invalidControl(let what): "camera control: \(what)"
        }
    }
}

extension CameraSource {
    /// Sources that render their own frames deliver planar 4:2:0.
    public var pixelFormatName: String { "yuv420" }

    /// Sources that render their own frames are made by Shutter.
    public var driverName: String { "Shutter" }

    /// Nothing to interrupt: the wait ends by itself soon enough.
    public func interruptWait() {}
}

/// A camera that drops frames on purpose or by necessity and counts them, for `/status`.
///
/// Read by the capture thread that owns the source, like every other member.
public protocol FrameDropCounting: AnyObject {
    /// Frames that arrived damaged (no SOI/EOI, too short) and were skipped.
    var corruptFrames: UInt64 { get }
    /// Frames dropped after opening while the exposure settled.
    var warmupFramesDropped: UInt64 { get }
}

/// A camera that converts its frames into one image buffer it reuses, and can lend that buffer
/// to whoever holds the frame, so the holder can write into the frame (the burned-in text)
/// without Swift's copy on write copying 1.8 MB first.
///
/// The buffer has one owner at a time. The source owns it until `lendFrameBuffer()` returns
/// true; from then the holder of the last frame's image owns it (the source keeps no reference,
/// so the image is unique once the holder drops its other copies) until it hands it back with
/// `returnFrameBuffer(_:)`. A buffer never returned is not an error: the source makes a new one
/// for its next frame. Called only by the thread that owns the source, between frames.
public protocol FrameBufferLending: AnyObject {
    /// Gives up the source's reference to the image of the frame it delivered last; false when
    /// it held none (that frame was made otherwise), so the caller must not expect a unique buffer.
    func lendFrameBuffer() -> Bool
    /// Takes back a buffer lent by `lendFrameBuffer()`, to convert the next frames into; every
    /// byte of it is written again before it is delivered, so what the holder drew does not
    /// reach the next frame. Ignored when it no longer fits the source's format.
    func returnFrameBuffer(_ image: consuming YUVImage)
}

/// A camera with adjustable controls (brightness, exposure, ...).
///
/// Called only by the thread that owns the source, between frames.
public protocol ControllableCamera: AnyObject {
    /// Every control with its range and current value.
    func controls() throws -> [CameraControl]
    /// Sets controls by name; throws `CameraError.invalidControl` naming an unknown control or a value out of range.
    func setControls(_ values: [String: Int]) throws
}

extension V4L2CameraSource: FrameDropCounting, ControllableCamera, FrameBufferLending {
    /// The negotiated V4L2 format's name (`rgb24 via libv4lconvert` for a converted one), or the
    /// most wanted one before `start()`.
    public var pixelFormatName: String {
        if let convertedFourCC { return "\(V4LConverter.formatName(convertedFourCC)) via libv4lconvert" }
        return (pixelFormat ?? formatPreference.first)?.rawValue ?? "unknown"
    }
}
