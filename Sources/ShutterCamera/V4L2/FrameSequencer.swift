/// Numbers delivered frames from 1, following the driver's frame counter so that frames the
/// driver or Shutter dropped leave a gap, without trusting that counter blindly.
///
/// Documentation/userspace-api/media/v4l/buffer.rst: `sequence` counts frames; whether frames lost
/// for want of a free buffer are counted is up to the driver, and uvcvideo counts them
/// (uvc_video.c: "discontinuous sequence numbers always indicate lost frames"). A driver that
/// leaves it at 0, or one that jumps, is tolerated: the number then simply goes up by one.
struct FrameSequencer {
    /// Gaps larger than this are not real (about 36 minutes of frames at 30 fps), so the driver's counter is ignored.
    static let largestGap: UInt32 = 1 << 16
    private var lastDriverSequence: UInt32?
    private(set) var last: UInt64 = 0

    /// The number of the frame the driver numbered `driverSequence`.
    mutating func number(driverSequence: UInt32) -> UInt64 {
        defer { lastDriverSequence = driverSequence }
        guard let previous = lastDriverSequence else {
            last = 1
            return last
        }
        let delta = driverSequence &- previous
        last += delta == 0 || delta > Self.largestGap ? 1 : UInt64(delta)
        return last
    }
}
