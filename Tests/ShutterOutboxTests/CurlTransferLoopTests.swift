import ShutterOutbox
import ShutterSystem
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A TCP socket listening on a free 127.0.0.1 port that never accepts: the kernel completes the
/// handshake into its backlog and the request then waits for ever, as on a hung server.
private final class SilentListener {
    let descriptor: Int32
    let port: Int

    init() throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0, listen(descriptor, 8) == 0 else {
            close(descriptor)
            throw SystemError(errno: errno, call: "bind/listen")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        self.descriptor = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
    }

    deinit { close(descriptor) }

    /// Accepts one connection on a thread of its own, reads the request's head, answers
    /// `response` and closes.
    func answerOnce(with response: [UInt8]) throws -> OSThread {
        let descriptor = descriptor
        return try OSThread.spawn(name: "test-answer") {
            let connection = accept(descriptor, nil, nil)
            guard connection >= 0 else { return }
            defer { close(connection) }
            var head = [UInt8]()
            var byte: UInt8 = 0
            while !head.ends(with: Array("\r\n\r\n".utf8)), read(connection, &byte, 1) == 1 {
                head.append(byte)
            }
            var sent = 0
            while sent < response.count {
                let count = response[sent...].withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                guard count > 0 else { return }
                sent += count
            }
        }
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

@Suite struct CurlTransferLoopTests {
    @Test func transfersBeyondTheLimitAreRefusedAndACancelledOneEndsAtOnce() async throws {
        let listener = try SilentListener()
        let loop = try CurlTransferLoop(userAgent: "test", maxTransfers: 1)
        let request = HTTPTransferRequest(
            method: "POST", url: "http://127.0.0.1:\(listener.port)/hook", body: Array("{}".utf8),
            timeoutMilliseconds: 600_000)
        let hung = Task { try await loop.send(request) }
        while loop.transfersInFlight < 1 { await Task.yield() }
        // The first holds the only slot until it ends; the second is refused, not queued.
        await #expect(throws: TransferError.queueFull) { _ = try await loop.send(request) }
        hung.cancel()
        await #expect(throws: CancellationError.self) { _ = try await hung.value }
        #expect(loop.transfersInFlight == 0)
        await loop.stop()
        await #expect(throws: TransferError.self) { _ = try await loop.send(request) }
    }

    @Test func anAnswersBodyIsKeptOnlyUpToItsLimit() async throws {
        let listener = try SilentListener()
        let answer = try listener.answerOnce(
            with: Array("HTTP/1.1 500 Broken\r\nContent-Length: 100000\r\n\r\n".utf8)
                + [UInt8](repeating: UInt8(ascii: "x"), count: 100_000))
        let loop = try CurlTransferLoop(userAgent: "test")
        let response = try await loop.send(
            HTTPTransferRequest(
                method: "POST", url: "http://127.0.0.1:\(listener.port)/", body: [1],
                timeoutMilliseconds: 10_000))
        #expect(response.status == 500 && !response.isSuccess)
        #expect(response.body.count == HTTPTransferResponse.maxBodyBytes)
        await answer.finished()
        await loop.stop()
    }

    @Test func aRefusedConnectionKeepsLibcurlsCode() async throws {
        // The listener is closed at once: nothing listens on its port any more (ECONNREFUSED).
        let port = try SilentListener().port
        let loop = try CurlTransferLoop(userAgent: "test")
        await #expect {
            _ = try await loop.send(
                HTTPTransferRequest(
                    method: "DELETE", url: "http://127.0.0.1:\(port)/x", timeoutMilliseconds: 5000))
        } throws: { error in
            (error as? TransferError)?.code == 7  // CURLE_COULDNT_CONNECT
        }
        #expect(try await loop.readFile(atPath: "/nonexistent/shutter-test", maxBytes: 10) == nil)
        // /proc/self/cmdline is never empty: one byte allowed is too few, and refused.
        await #expect(throws: SystemError.self) {
            _ = try await loop.readFile(atPath: "/proc/self/cmdline", maxBytes: 1)
        }
        #expect(try await loop.readFile(atPath: "/proc/self/cmdline", maxBytes: 1 << 20)?.isEmpty == false)
        await loop.stop()
    }
}
