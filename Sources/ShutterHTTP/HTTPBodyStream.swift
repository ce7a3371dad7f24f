/// What a body stream has for its connection when asked.
public enum HTTPStreamOutput {
    /// Bytes to write now, in order. Arrays shared with other connections are not copied.
    case chunks([[UInt8]])
    /// Nothing now: the stream calls `HTTPStreamWriter.wake()` once it has more.
    case waiting
    /// The body is complete; the connection closes after writing it.
    case finished
}

/// A response body written as it is produced, such as a live MJPEG stream.
///
/// The connection pulls: it asks for output only once everything before has been written
/// to the socket, so a stream decides at the last moment what to send (the newest frame)
/// and a slow client never makes anything queue up. Such a body has no length, so the
/// response carries no `Content-Length` and the connection closes after it.
///
/// Every method is called on the event-loop thread that owns the connection.
public protocol HTTPBodyStream: AnyObject, Sendable {
    /// The head is queued; keep `writer` to wake the connection when output is ready.
    func start(_ writer: HTTPStreamWriter)
    /// The next output; called whenever the connection has written everything before.
    func nextOutput() -> HTTPStreamOutput
    /// The connection closed (the client left, stalled, or the server is stopping). Called once.
    func stop()
    /// Milliseconds a client may read nothing before it is dropped; nil keeps the server's
    /// `writeTimeoutMilliseconds`.
    var stallTimeoutMilliseconds: Int? { get }
    /// The most bytes the kernel may hold unsent for this connection (`TCP_NOTSENT_LOWAT`);
    /// nil leaves the kernel's send buffer alone.
    ///
    /// A live stream wants a small one: the send buffer grows to megabytes (`tcp_wmem`), and
    /// a client that reads slowly would get everything queued there, seconds behind, instead
    /// of the stream's newest output; with the limit the socket reports full early, so the
    /// stream skips ahead.
    var unsentByteLimit: Int? { get }
}

extension HTTPBodyStream {
    public var stallTimeoutMilliseconds: Int? { nil }
    public var unsentByteLimit: Int? { nil }
}

/// A stream's handle on its connection.
public final class HTTPStreamWriter: @unchecked Sendable {
    // @unchecked Sendable: `connection` is read only on the loop thread; other threads may
    // only read `loop` (immutable) to hand work to that thread.
    /// The loop that owns the connection: other threads reach the stream through `loop.execute`.
    public let loop: EventLoop
    private weak var connection: HTTPConnection?

    init(loop: EventLoop, connection: HTTPConnection) {
        self.loop = loop
        self.connection = connection
    }

    /// Tells the connection the stream has output; a no-op once the connection has closed.
    /// Call on the loop thread.
    public func wake() {
        assert(loop.inEventLoop)
        connection?.streamHasOutput()
    }
}
