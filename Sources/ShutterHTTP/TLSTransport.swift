import COpenSSL
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// TLS over a connection's socket with OpenSSL (`SSL`), non-blocking: `SSL_ERROR_WANT_READ` and
/// `SSL_ERROR_WANT_WRITE` become `.wouldBlock` or a handshake's wish, which the state machine
/// turns into epoll interest.
///
/// With kernel TLS for sending (`SSL_OP_ENABLE_KTLS` and a kernel with the `tls` module), the
/// kernel encrypts: files go out with `SSL_sendfile`, without passing through user space.
/// Otherwise a file region is read into the server's scratch buffer (`fileChunkSize` at a time,
/// so one `pread` serves several records) and written with `SSL_write`, record by record, until
/// the socket is full. Memory chunks of 16 KiB or more (a picture, a preview frame) are handed to
/// `SSL_write` from the response's own array, never copied by us; runs of smaller ones (a head
/// and a small body, a part's headers) are gathered into the scratch buffer first, so they make
/// one record instead of several.
///
/// Without kTLS a response head followed by a file (`moreFollows`) is held back and sent in the
/// file's first record, as nginx's `ssl_buffer` does: one record and one `write` fewer per picture.
///
/// OpenSSL writes to the socket with write(2), which has no `MSG_NOSIGNAL`: a client that reset
/// the connection raises SIGPIPE, which must be blocked (`shutterd` blocks it first thing in
/// `main`, as `sendfile` already needs), so the write fails with `EPIPE` instead.
///
/// Every call starts with an empty OpenSSL error queue (`SSL_get_error` reads it), and
/// `SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER` lets a write that would have blocked be retried from
/// the scratch buffer refilled with the same bytes (the queue's front does not change until
/// a write succeeds).
final class TLSTransport: ConnectionTransport {
    /// What a handshake step did.
    enum HandshakeProgress {
        case finished
        case wantsRead
        case wantsWrite
        case failed(TLSError)
    }

    /// The largest plaintext of one TLS record (RFC 8446 §5.1).
    static let recordSize = 16 * 1024
    /// How much of a file one `pread` takes without kTLS: four records.
    static let fileChunkSize = 4 * recordSize

    let descriptor: Int32
    private let ssl: OpaquePointer
    /// The server's scratch buffer (at least `fileChunkSize`), shared by every connection on the loop.
    private let scratch: UnsafeMutableRawBufferPointer
    /// Whether records are sent by the kernel; known once the handshake finished.
    private(set) var kernelSends = false
    /// A small head held back for the first record of the file that follows it; already
    /// reported as written.
    private var heldHead: [UInt8] = []
    /// The most a held head may be (heads are a few hundred bytes).
    private static let heldHeadLimit = 4096

    /// A server-side TLS connection on `descriptor` with `context`'s certificate.
    init(context: TLSContext, descriptor: Int32, scratch: UnsafeMutableRawBufferPointer) throws(TLSError) {
        precondition(scratch.count >= Self.fileChunkSize)
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else { throw TLSError.fromQueue("SSL_new") }
        guard SSL_set_fd(ssl, descriptor) == 1 else {
            SSL_free(ssl)
            throw TLSError.fromQueue("SSL_set_fd")
        }
        SSL_set_accept_state(ssl)
        self.ssl = ssl
        self.descriptor = descriptor
        self.scratch = scratch
    }

    deinit {
        SSL_free(ssl)
    }

    /// One step of the handshake; call again when the socket is ready as it wishes.
    func handshake() -> HandshakeProgress {
        ERR_clear_error()
        let result = SSL_do_handshake(ssl)
        if result == 1 {
            kernelSends = cshutter_ssl_ktls_send(ssl) == 1
            return .finished
        }
        switch SSL_get_error(ssl, result) {
        case SSL_ERROR_WANT_READ: return .wantsRead
        case SSL_ERROR_WANT_WRITE: return .wantsWrite
        case SSL_ERROR_SYSCALL:
            let code = errno
            ERR_clear_error()
            let reason = code == 0 ? "the client closed the connection" : String(cString: strerror(code))
            return .failed(TLSError(operation: "handshake", code: 0, reason: reason))
        default:
            return .failed(TLSError.fromQueue("handshake"))
        }
    }

    /// The negotiated protocol and cipher, such as `TLSv1.3` and `TLS_AES_256_GCM_SHA384`.
    var negotiated: (version: String, cipher: String) {
        (
            String(cString: SSL_get_version(ssl)),
            String(cString: SSL_CIPHER_get_name(SSL_get_current_cipher(ssl)))
        )
    }

    /// Whether records are received by the kernel.
    var kernelReceives: Bool { cshutter_ssl_ktls_receive(ssl) == 1 }

    func read(into buffer: UnsafeMutableRawBufferPointer) throws -> IOResult<Int> {
        ERR_clear_error()
        let count = SSL_read(ssl, buffer.baseAddress, Int32(clamping: buffer.count))
        if count > 0 { return .processed(Int(count)) }
        return try outcome(of: count, "SSL_read")
    }

    var hasBufferedInput: Bool { SSL_pending(ssl) > 0 }

    func write(_ vectors: UnsafeMutableBufferPointer<iovec>, count: Int, moreFollows: Bool) throws
        -> IOResult<Int>
    {
        if !heldHead.isEmpty {
            // Not reached (the file is the next thing sent), but never lose bytes reported written.
            guard try flushHeldHead() else { return .wouldBlock }
        }
        if moreFollows && !kernelSends {
            var total = 0
            for index in 0..<count { total += vectors[index].iov_len }
            if total <= Self.heldHeadLimit {
                for index in 0..<count {
                    heldHead.append(
                        contentsOf: UnsafeRawBufferPointer(
                            start: vectors[index].iov_base, count: vectors[index].iov_len))
                }
                return .processed(total)
            }
        }
        // Record by record until the socket is full. Which bytes make the next record depends
        // only on the queue from the current position (which only grows at its end), so a record
        // that would block is offered again with the same bytes first.
        var total = 0
        var index = 0
        var done = 0  // bytes of vectors[index] written by this call
        while index < count {
            let length = vectors[index].iov_len - done
            let result: IOResult<Int>
            if length >= Self.recordSize || index == count - 1 {
                result = try write(
                    UnsafeRawBufferPointer(start: vectors[index].iov_base! + done, count: length))
            } else {
                // Whole small chunks, in order, while they fit one record.
                (scratch.baseAddress!).copyMemory(from: vectors[index].iov_base! + done, byteCount: length)
                var filled = length
                var next = index + 1
                while next < count, vectors[next].iov_len < Self.recordSize - filled {
                    (scratch.baseAddress! + filled).copyMemory(
                        from: vectors[next].iov_base!, byteCount: vectors[next].iov_len)
                    filled += vectors[next].iov_len
                    next += 1
                }
                result = try write(UnsafeRawBufferPointer(rebasing: scratch[0..<filled]))
            }
            guard case .processed(var written) = result else {
                return total > 0 ? .processed(total) : .wouldBlock
            }
            total += written
            while index < count, written >= vectors[index].iov_len - done {
                written -= vectors[index].iov_len - done
                done = 0
                index += 1
            }
            done += written
        }
        return .processed(total)
    }

    func sendFile(_ file: Int32, offset: Int, count: Int) throws -> IOResult<Int> {
        if kernelSends {
            if !heldHead.isEmpty {
                guard try flushHeldHead() else { return .wouldBlock }
            }
            ERR_clear_error()
            let sent = SSL_sendfile(ssl, file, off_t(offset), count, 0)
            if sent > 0 { return .processed(Int(sent)) }
            if sent == 0 { return .processed(0) }
            return try outcome(of: Int32(-1), "SSL_sendfile")
        }
        // The held head first, then as much of the file as fits the scratch buffer.
        let held = heldHead.count
        heldHead.withUnsafeBytes { scratch.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: held) }
        let wanted = min(count, Self.fileChunkSize - held)
        let got = try syscall("pread") { pread(file, scratch.baseAddress! + held, wanted, off_t(offset)) }
        if got == 0 { return .processed(0) }
        let end = held + got
        // Record by record (partial writes) until the socket is full. A record that would block
        // stays in OpenSSL, not counted; the next call builds the same bytes again (the held
        // head, then the file from the same offset), so the retried write gets what it needs.
        var written = 0
        while written < end {
            switch try write(UnsafeRawBufferPointer(rebasing: scratch[written..<end])) {
            case .processed(let count): written += count
            case .wouldBlock:
                // Nothing of the file went yet (records may be shorter than the head when the
                // client asked for a small maximum fragment length, RFC 6066 §4).
                if written <= held {
                    heldHead.removeFirst(written)
                    return .wouldBlock
                }
                return .processed(fileBytesWritten(written, held: held))
            }
        }
        return .processed(fileBytesWritten(written, held: held))
    }

    /// The file's share of `written` bytes (more than `held`) that began with the held head,
    /// which is then all sent.
    private func fileBytesWritten(_ written: Int, held: Int) -> Int {
        heldHead.removeAll(keepingCapacity: true)
        return written - held
    }

    /// Writes the held head on its own; false if the socket is full (call again).
    private func flushHeldHead() throws -> Bool {
        while !heldHead.isEmpty {
            let result = try heldHead.withUnsafeBytes { try write($0) }
            guard case .processed(let count) = result else { return false }
            heldHead.removeFirst(count)
        }
        return true
    }

    func shutdownSending() throws {
        // close_notify first (best effort: a full socket buffer just loses it), then the
        // TCP half-close, so the client sees a proper end of the TLS stream.
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        ERR_clear_error()
        try shutdownSocketSending(descriptor)
    }

    private func write(_ bytes: UnsafeRawBufferPointer) throws -> IOResult<Int> {
        ERR_clear_error()
        let count = SSL_write(ssl, bytes.baseAddress, Int32(clamping: bytes.count))
        if count > 0 { return .processed(Int(count)) }
        return try outcome(of: count, "SSL_write")
    }

    /// What a failed or short SSL call means: wait, end of stream, or a lost connection.
    private func outcome(of result: Int32, _ call: String) throws -> IOResult<Int> {
        switch SSL_get_error(ssl, result) {
        // After the handshake neither direction waits for the other (renegotiation is off); a
        // TLS 1.3 key update a read answers is sent by a later write.
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .wouldBlock
        case SSL_ERROR_ZERO_RETURN:
            // The client's close_notify: the end of its sending for a read; a write must not
            // report 0 bytes (that would mean "no progress" to the write loops).
            if call == "SSL_read" { return .processed(0) }
            throw TLSError(operation: call, code: 0, reason: "the client closed the TLS session")
        case SSL_ERROR_SYSCALL:
            let code = errno
            ERR_clear_error()
            // errno 0: the peer closed without close_notify, which a read takes as end of file.
            if code == 0 {
                if call == "SSL_read" { return .processed(0) }
                throw TLSError(operation: call, code: 0, reason: "the client closed the connection")
            }
            throw SystemError(errno: code, call: call)
        default:
            throw TLSError.fromQueue(call)
        }
    }
}
