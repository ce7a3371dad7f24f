import ShutterSystem

/// A `Logger.Sink` that keeps every line, for asserting what was logged.
public final class RecordingLogSink: Logger.Sink {
    // Written by whichever thread logs, read by the test afterwards.
    private let recorded = LockedValue<(lines: [String], batches: Int)>(([], 0))

    public init() {}

    /// Every line written so far, in order.
    public var lines: [String] { recorded.withLock { $0.lines } }
    /// How many writes brought them (a batch of lines is one).
    public var writes: Int { recorded.withLock { $0.batches } }

    public func write(_ line: String) {
        recorded.withLock {
            $0.lines.append(line)
            $0.batches += 1
        }
    }

    public func write(lines: [UInt8]) {
        let split = lines.split(separator: UInt8(ascii: "\n")).map { String(decoding: $0, as: UTF8.self) }
        recorded.withLock {
            $0.lines += split
            $0.batches += 1
        }
    }
}
