import ShutterCamera
import ShutterSystem
import Synchronization

/// Makes one smaller size of the live picture on a thread of its own (not the cooperative pool,
/// where a few 1080p decodes would hold up request handlers): it scales the newest frame and
/// hands the result on. Frames that arrive while it works replace each other, so a scaler that
/// falls behind drops frames and never queues them.
final class RenditionScaler: Sendable {
    /// The width it makes.
    let width: Int
    private let mailbox = LockedValue<(frame: EncodedFrame?, finished: Bool)>((nil, false))
    private let wakeup = ThreadWakeup()
    private let encoded = Atomic<UInt64>(0)

    /// Starts the thread; `deliver` gets each scaled frame on it.
    init(
        width: Int, quality: Int, logger: Logger, deliver: @escaping @Sendable (EncodedFrame) -> Void
    ) throws {
        self.width = width
        try OSThread.spawn(name: "shutter-scale-\(width)") { [self] in
            // Made here: the encoder's handle belongs to this thread alone.
            let encoder: JPEGEncoder
            do {
                encoder = try JPEGEncoder(quality: quality)
            } catch {
                logger.error("live preview: no encoder", ["error": String(describing: error)])
                return
            }
            var loggedFailure = false
            while let frame = nextFrame() {
                do {
                    let scaled = try Self.scale(frame, minimumWidth: width, encoder: encoder)
                    encoded.add(1, ordering: .relaxed)
                    deliver(scaled)
                } catch  where !loggedFailure {
                    loggedFailure = true
                    logger.warning(
                        "live preview: a frame could not be scaled",
                        ["width": String(width), "error": String(describing: error)])
                } catch {}
            }
        }.detach()
    }

    /// Frames encoded at this width so far.
    var framesEncoded: UInt64 { encoded.load(ordering: .relaxed) }

    /// Makes `frame` the next to scale, replacing one not started yet.
    func offer(_ frame: EncodedFrame) {
        mailbox.withLock { $0.frame = frame }
        wakeup.signal()
    }

    /// Ends the thread once the frame in hand, if any, is done.
    func finish() {
        mailbox.withLock { $0.finished = true }
        wakeup.signal()
    }

    /// The next frame to scale, waiting for one; nil once finished.
    private func nextFrame() -> EncodedFrame? {
        while true {
            let (frame, finished) = mailbox.withLock { state in
                defer { state.frame = nil }
                return (state.frame, state.finished)
            }
            if finished { return nil }
            if let frame { return frame }
            _ = wakeup.wait(untilMonotonic: nil)
        }
    }

    private static func scale(_ frame: EncodedFrame, minimumWidth: Int, encoder: JPEGEncoder) throws
        -> EncodedFrame
    {
        let decoded = try JPEGDecoder.decodeRGB(frame.jpeg, minimumWidth: minimumWidth)
        let jpeg = try encoder.encodeRGB(decoded.pixels, width: decoded.width, height: decoded.height)
        return EncodedFrame(
            sequence: frame.sequence, capturedAt: frame.capturedAt, wallMilliseconds: frame.wallMilliseconds,
            width: decoded.width, height: decoded.height, jpeg: jpeg, receivedAt: frame.receivedAt)
    }
}
