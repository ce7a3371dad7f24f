import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Testing

/// The TLS server over real sockets, what a plain TCP client can check: plain HTTP on the TLS
/// port and a client that never starts its handshake. Handshakes with a real TLS client are in
/// `Tests/e2e/test_tls.py`; the phases themselves are tested byte by byte in
/// `HTTPConnectionStateMachineTests`.
// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct HTTPServerTLSTests {
    private static func router() -> Router {
        var router = Router()
        router.add(.get, "/hello", .immediate { _, _ in HTTPResponse(body: .bytes(Array("hello".utf8))) })
        return router
    }

    @Test func plainHTTPGetsA400SayingUseHTTPSAndTheClose() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router(), tls: try TLSContextTests.loaded())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = socket.readResponse()
            #expect(response?.status == 400)
            #expect(response?.head.contains("Connection: close\r\n") == true)
            let body = String(decoding: response?.body ?? [], as: UTF8.self)
            #expect(body.contains("use an https:// URL"))
            // The lingering close drains the unread request; the client's close ends it.
        }
    }

    @Test func aClientThatNeverStartsItsHandshakeIsClosedAfterTheRequestTimeout() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router(), tls: try TLSContextTests.loaded()) {
                $0.requestTimeoutMilliseconds = 1000
                $0.idleTimeoutMilliseconds = 60_000
            }
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            // Accepted: the server knows the connection before the clock moves.
            while running.connectionCount == 0 {}
            running.advance(byMilliseconds: 1000)
            #expect(running.connectionCount == 1)
            running.advance(byMilliseconds: 1)
            #expect(socket.readUntilClosed() == [])
            #expect(running.connectionCount == 0)
        }
    }

    @Test func aStalledHandshakeIsClosedAfterTheRequestTimeoutFromTheAccept() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router(), tls: try TLSContextTests.loaded()) {
                $0.requestTimeoutMilliseconds = 1000
            }
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            while running.connectionCount == 0 {}
            // The start of a ClientHello record, and then nothing.
            try socket.send([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])
            running.advance(byMilliseconds: 1000)
            #expect(running.connectionCount == 1)
            running.advance(byMilliseconds: 1)
            #expect(socket.readUntilClosed() == [])
        }
    }

    @Test func overTheConnectionLimitATLSConnectionIsClosedWithoutAPlainAnswer() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router(), tls: try TLSContextTests.loaded()) {
                $0.maxConnections = 1
            }
            defer { running.stop() }
            let first = try TestSocket(port: running.port)
            try withExtendedLifetime(first) {
                while running.connectionCount == 0 {}
                let second = try TestSocket(port: running.port)
                // Closed with nothing written: a plain-text 503 would be garbage to a TLS client.
                #expect(second.readUntilClosed() == [])
                #expect(running.connectionCount == 1)
            }
        }
    }
}
