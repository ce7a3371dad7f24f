import ShutterSystem

/// Which frames a viewer with a frame-rate cap gets.
///
/// It credits one frame per interval rather than measuring from the last frame taken, so a
/// cap that does not divide the camera's rate is met on average (20 fps from a 30 fps camera
/// is two frames in three), and a quarter interval of tolerance absorbs capture jitter (a
/// 30 fps cap on a 30 fps camera takes every frame). After a gap (a camera that was gone)
/// it starts afresh instead of letting a burst through to catch up.
public struct FrameRateLimiter: Sendable {
    /// Nanoseconds between frames; 0 takes every frame.
    let intervalNanoseconds: UInt64
    private var nextDue: MonotonicInstant?

    /// A limiter for at most `framesPerSecond` frames a second; nil takes every frame.
    init(framesPerSecond: Double?) {
        if let framesPerSecond, framesPerSecond > 0 {
            intervalNanoseconds = UInt64(1_000_000_000 / framesPerSecond)
        } else {
            intervalNanoseconds = 0
        }
    }

    /// Whether the frame captured at `capturedAt` goes to the viewer; counts it if so.
    mutating func admit(_ capturedAt: MonotonicInstant) -> Bool {
        guard intervalNanoseconds > 0 else { return true }
        guard let due = nextDue else {
            nextDue = capturedAt.advanced(by: intervalNanoseconds)
            return true
        }
        if capturedAt.advanced(by: intervalNanoseconds / 4) < due { return false }
        if capturedAt > due.advanced(by: intervalNanoseconds) {
            nextDue = capturedAt.advanced(by: intervalNanoseconds)
        } else {
            nextDue = due.advanced(by: intervalNanoseconds)
        }
        return true
    }
}
