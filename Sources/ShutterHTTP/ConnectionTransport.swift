import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// How a connection's bytes reach the client: the seam between `HTTPConnection` (which carries
/// out its state machine's actions) and the socket, plain (`PlainTransport`) or TLS
/// (`TLSTransport`). Each call is non-blocking: `.wouldBlock` means "wait for the socket", and
/// a thrown error means the connection is lost.
///
/// Ownership: a transport belongs to one connection and is used only on the server's loop thread.
protocol ConnectionTransport: AnyObject {
    /// Reads once into `buffer`: the count, 0 at the client's end of sending, or `.wouldBlock`.
    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> IOResult<Int>
    /// Whether bytes already read from the socket wait inside the transport (TLS records
    /// decrypted ahead), which no readiness event would announce.
    var hasBufferedInput: Bool { get }
    /// Writes the first `count` of `vectors` (in order), holding them back briefly if `moreFollows`.
    func write(_ vectors: UnsafeMutableBufferPointer<iovec>, count: Int, moreFollows: Bool) throws
        -> IOResult<Int>
    /// Writes up to `count` bytes of `file` from `offset`; 0 means the file ended early.
    func sendFile(_ file: Int32, offset: Int, count: Int) throws -> IOResult<Int>
    /// Ends the sending direction (the lingering close's start).
    func shutdownSending() throws
}

/// Plain TCP: the syscalls themselves, `sendmsg` for memory and `sendfile` for files.
final class PlainTransport: ConnectionTransport {
    let descriptor: Int32

    init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> IOResult<Int> {
        try nonBlockingSyscall("read") { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
    }

    var hasBufferedInput: Bool { false }

    func write(_ vectors: UnsafeMutableBufferPointer<iovec>, count: Int, moreFollows: Bool) throws
        -> IOResult<Int>
    {
        var message = msghdr()
        message.msg_iov = vectors.baseAddress
        message.msg_iovlen = count
        // MSG_MORE holds a response head back so it leaves in the same segment as the file's
        // first bytes (what nginx gets from tcp_nopush).
        let flags = Int32(MSG_NOSIGNAL) | (moreFollows ? Int32(MSG_MORE) : 0)
        return try nonBlockingSyscall("sendmsg") { Glibc.sendmsg(descriptor, &message, flags) }
    }

    func sendFile(_ file: Int32, offset: Int, count: Int) throws -> IOResult<Int> {
        var position = off_t(offset)
        return try nonBlockingSyscall("sendfile") { Glibc.sendfile(descriptor, file, &position, count) }
    }

    func shutdownSending() throws {
        try shutdownSocketSending(descriptor)
    }
}

/// `shutdown(SHUT_WR)`: the client reads the end of the stream once it has read everything sent.
func shutdownSocketSending(_ descriptor: Int32) throws {
    _ = try syscall("shutdown(SHUT_WR)") { Glibc.shutdown(descriptor, Int32(SHUT_WR)) }
}
