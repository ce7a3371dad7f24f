import ShutterSystem
import Synchronization

/// Counters the capture thread updates and `/status` reads.
public final class CaptureCounters: Sendable {
    // Relaxed atomics: each counter is read alone, for display; no ordering is implied.
    let captured = Atomic<UInt64>(0)
    let encoded = Atomic<UInt64>(0)
    let failures = Atomic<UInt64>(0)
    let reopens = Atomic<UInt64>(0)
    let corrupt = Atomic<UInt64>(0)
    let warmupDropped = Atomic<UInt64>(0)
    /// How long each frame took to encode (frames passed through as JPEG are not counted).
    public let encodeTime = LatencyHistogram()

    public var framesCaptured: UInt64 { captured.load(ordering: .relaxed) }
    public var framesEncoded: UInt64 { encoded.load(ordering: .relaxed) }
    public var captureFailures: UInt64 { failures.load(ordering: .relaxed) }
    public var cameraReopens: UInt64 { reopens.load(ordering: .relaxed) }
    /// Damaged frames the camera delivered and capture skipped.
    public var corruptFrames: UInt64 { corrupt.load(ordering: .relaxed) }
    /// Frames dropped after each open while exposure settled.
    public var warmupFramesDropped: UInt64 { warmupDropped.load(ordering: .relaxed) }
}
