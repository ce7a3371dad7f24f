import ShutterHTTP
import ShutterSystem
import Synchronization

/// A body stream a test feeds by hand: chunks pushed on the loop thread are written when the
/// connection pulls; `finish()` ends it.
public final class ManualBodyStream: HTTPBodyStream, @unchecked Sendable {
    // @unchecked Sendable: `writer`, `queued` and `finishing` are touched only on the loop
    // thread (or, with no loop, on the test's thread); the test reads the atomics from anywhere.
    private var writer: HTTPStreamWriter?
    private var queued: [[UInt8]] = []
    private var finishing = false
    /// Times the connection started the stream.
    public let starts = Atomic<Int>(0)
    /// Times the connection stopped it.
    public let stops = Atomic<Int>(0)
    /// Times the connection asked while nothing was queued.
    public let waits = Atomic<Int>(0)
    private let stopped = ThreadWakeup()
    public let stallTimeoutMilliseconds: Int?
    public let unsentByteLimit: Int?

    /// A stream with the given stall timeout and unsent-byte cap (nil: the server's defaults).
    public init(stallTimeoutMilliseconds: Int? = nil, unsentByteLimit: Int? = nil) {
        self.stallTimeoutMilliseconds = stallTimeoutMilliseconds
        self.unsentByteLimit = unsentByteLimit
    }

    public func start(_ writer: HTTPStreamWriter) {
        self.writer = writer
        starts.add(1, ordering: .relaxed)
    }

    public func stop() {
        writer = nil
        stops.add(1, ordering: .relaxed)
        stopped.signal()
    }

    public func nextOutput() -> HTTPStreamOutput {
        if !queued.isEmpty {
            defer { queued.removeAll() }
            return .chunks(queued)
        }
        if finishing { return .finished }
        waits.add(1, ordering: .relaxed)
        return .waiting
    }

    /// Queues bytes and wakes the connection (call on the loop thread).
    public func push(_ bytes: [UInt8]) {
        queued.append(bytes)
        writer?.wake()
    }

    /// Ends the stream once what is queued has been written (call on the loop thread).
    public func finish() {
        finishing = true
        writer?.wake()
    }

    /// Blocks until the connection stops the stream; false if `seconds` pass first (a safety
    /// limit for a test that has failed, not a wait for time to pass).
    public func waitForStop(seconds: Int = 5) -> Bool {
        if stops.load(ordering: .relaxed) > 0 { return true }
        let limit = SystemClock().monotonicNow().advanced(by: UInt64(seconds) * 1_000_000_000)
        while stops.load(ordering: .relaxed) == 0 {
            if !stopped.wait(untilMonotonic: limit) { return stops.load(ordering: .relaxed) > 0 }
        }
        return true
    }
}
