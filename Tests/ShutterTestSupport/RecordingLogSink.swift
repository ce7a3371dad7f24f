import ShutterSystem

/// A `Logger.Sink` that keeps every line, for asserting what was logged.
public final class RecordingLogSink: Logger.Sink {
    // Written by whichever thread logs, read by the test afterwards.
    private let recorded = LockedValue<[String]>([])

    public init() {}

    /// Every line written so far, in order.
    public var lines: [String] { recorded.withLock { $0 } }

    public func write(_ line: String) {
        recorded.withLock { $0.append(line) }
    }
}
