import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A server whose `/stream` answers with `stream`, and a client that asked for it and read the head.
private struct StreamingClient {
    let stream: ManualBodyStream
    let running: RunningHTTPServer
    let socket: TestSocket
    let head: String

    init(
        _ stream: ManualBodyStream = ManualBodyStream(), receiveBuffer: Int32? = nil,
        configure: (inout HTTPServerConfiguration) -> Void = { _ in }
    ) throws {
        self.stream = stream
        running = try RunningHTTPServer(router: HTTPStreamTests.router(stream), configure: configure)
        socket = try TestSocket(port: running.port, receiveBuffer: receiveBuffer)
        try socket.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
        head = socket.readHead() ?? ""
    }
}

/// A count that handlers on any thread add to.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

/// Body streams over real sockets: resets, kernel buffers and `TCP_NOTSENT_LOWAT`, which only a
/// real socket shows. The stream decisions are tested byte by byte in
/// `HTTPConnectionStateMachineTests`.
// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct HTTPStreamTests {
    fileprivate static func router(
        _ stream: ManualBodyStream, gate: HandlerGate = HandlerGate(), counted: Counter = Counter()
    ) -> Router {
        var router = Router()
        router.add(
            .get, "/stream",
            .immediate { _, _ in
                HTTPResponse(headers: ["Content-Type": "text/plain"], body: .stream(stream))
            })
        router.add(.get, "/hello", .immediate { _, _ in HTTPResponse(body: .bytes(Array("hello".utf8))) })
        router.add(
            .get, "/slow",
            .task { _, _ in
                await gate.pass()
                return HTTPResponse(body: .bytes(Array("slow".utf8)))
            })
        router.add(
            .post, "/count",
            .immediate { _, _ in
                counted.value.add(1, ordering: .relaxed)
                return HTTPResponse(body: .bytes(Array("counted".utf8)))
            })
        return router
    }

    @Test func chunksArriveAsProducedAndTheEndIsTheClose() async throws {
        try await onDedicatedThread {
            let client = try StreamingClient()
            let (stream, running, socket, head) = (client.stream, client.running, client.socket, client.head)
            defer { running.stop() }
            #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
            // No length: the body ends when the connection closes, and the head says so.
            #expect(!head.lowercased().contains("content-length"))
            #expect(head.contains("Connection: close\r\n"))
            #expect(stream.starts.load(ordering: .relaxed) == 1)

            // The push wakes the connection, which writes and asks again, all before onLoop returns.
            running.onLoop { stream.push(Array("first ".utf8)) }
            #expect(socket.read(count: 6) == Array("first ".utf8))
            #expect(stream.waits.load(ordering: .relaxed) == 2)

            running.onLoop {
                stream.push(Array("second ".utf8))
                stream.push(Array("third".utf8))
                stream.finish()
            }
            #expect(socket.readToEnd() == Array("second third".utf8))
            #expect(stream.stops.load(ordering: .relaxed) == 1)
        }
    }

    @Test func aViewerThatHangsUpIsForgottenAtTheNextWrite() async throws {
        try await onDedicatedThread {
            let client = try StreamingClient()
            let (stream, running, socket) = (client.stream, client.running, client.socket)
            defer { running.stop() }
            shutdown(socket.descriptor, Int32(SHUT_RDWR))
            // The end of its sending alone could be a half-close: the stream goes on...
            running.onLoop {}
            #expect(stream.stops.load(ordering: .relaxed) == 0)
            // ...until the client's reset answers the next bytes.
            running.onLoop { stream.push(Array("frame".utf8)) }
            #expect(stream.waitForStop())
            #expect(running.connectionCount == 0)
        }
    }

    @Test func headGetsTheHeadAndNeverStartsTheStream() async throws {
        try await onDedicatedThread {
            let stream = ManualBodyStream()
            let running = try RunningHTTPServer(router: Self.router(stream))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n")
            let raw = String(decoding: socket.readToEnd(), as: UTF8.self)
            #expect(raw.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(raw.hasSuffix("\r\n\r\n"))
            #expect(stream.starts.load(ordering: .relaxed) == 0)
        }
    }

    @Test func requestsPipelinedBehindAStreamAreNotAnsweredIntoIt() async throws {
        try await onDedicatedThread {
            let stream = ManualBodyStream()
            let running = try RunningHTTPServer(router: Self.router(stream))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "GET /hello HTTP/1.1\r\nHost: t\r\n\r\nGET /stream HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
            )
            #expect(socket.readResponse()?.body == Array("hello".utf8))
            _ = socket.readHead()
            running.onLoop {
                stream.push(Array("frame".utf8))
                stream.finish()
            }
            // The stream's bytes, then the close: the third request is never answered.
            #expect(socket.readToEnd() == Array("frame".utf8))
        }
    }

    @Test func aViewerThatStopsReadingIsDroppedAfterTheStreamsStallTimeout() async throws {
        try await onDedicatedThread {
            // The server's own write timeout is long: the stream's must be the one that applies.
            let client = try StreamingClient(
                ManualBodyStream(stallTimeoutMilliseconds: 300), receiveBuffer: 4096
            ) {
                $0.writeTimeoutMilliseconds = 60_000
            }
            let (stream, running) = (client.stream, client.running)
            defer { running.stop() }
            let chunk = [UInt8](repeating: 0x55, count: 1 << 20)
            // Never read: a few megabytes fill both socket buffers, then writing stalls.
            for _ in 0..<8 { running.onLoop { stream.push(chunk) } }
            // One tick past the stall timeout on the server's clock: the first sample of the send
            // queue shows no draining yet, so the viewer is dropped then.
            running.advance(byMilliseconds: 301)
            #expect(stream.stops.load(ordering: .relaxed) == 1)
            #expect(running.connectionCount == 0)
        }
    }

    @Test func shutdownEndsStreamsInsteadOfWaitingForThem() async throws {
        try await onDedicatedThread {
            let client = try StreamingClient(receiveBuffer: 4096) { $0.shutdownGraceMilliseconds = 30_000 }
            let (stream, running, socket) = (client.stream, client.running, client.socket)
            // Owed more than the socket buffers hold (the client reads nothing yet): a stream has
            // no end to wait for, even so.
            running.onLoop { stream.push([UInt8](repeating: 0x55, count: 8 << 20)) }
            running.beginShutdown()
            // The grace never ends on the virtual clock: only ending the stream lets this finish.
            #expect(running.waitForShutdown())
            running.stop()
            #expect(stream.stops.load(ordering: .relaxed) == 1)
            // Closed mid-frame: what the client gets is cut short.
            #expect(socket.readToEnd().count < 8 << 20)
        }
    }

    /// A stream whose response is reached only after shutdown began (it waited behind a slower
    /// pipelined answer) gets its head and the close, and does not hold the shutdown.
    @Test func aStreamReachedDuringShutdownDoesNotHoldTheShutdown() async throws {
        try await onDedicatedThread {
            let stream = ManualBodyStream()
            let gate = HandlerGate()
            let running = try RunningHTTPServer(router: Self.router(stream, gate: gate))
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\nGET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
            // A client that reads everything and closes when the server does.
            let received = LockedValue<[UInt8]>([])
            let descriptor = socket.descriptor
            let reader = try OSThread.spawn(name: "reader") {
                var buffer = [UInt8](repeating: 0, count: 4096)
                while true {
                    let n = buffer.withUnsafeMutableBytes {
                        Glibc.recv(descriptor, $0.baseAddress, $0.count, 0)
                    }
                    if n <= 0 { break }
                    received.withLock { $0 += buffer[0..<n] }
                }
                shutdown(descriptor, Int32(SHUT_RDWR))
            }
            // Both were read in one go and dispatched; /slow waits at the gate.
            #expect(gate.waitForArrivals(1))
            running.beginShutdown()
            gate.open()
            // The grace never ends on the virtual clock: a stream holding the shutdown would show here.
            #expect(running.waitForShutdown())
            reader.join()
            running.stop()
            let text = String(decoding: received.withLock { $0 }, as: UTF8.self)
            #expect(text.contains("\r\n\r\nslowHTTP/1.1 200 OK\r\n"))
            #expect(text.hasSuffix("Connection: close\r\n\r\n"))
            #expect(stream.starts.load(ordering: .relaxed) == 0)
        }
    }

    /// Requests pipelined behind a stream are never answered, so they must not run either: a POST
    /// behind `GET /stream` would have its effect and the client could never learn of it.
    @Test func requestsPipelinedBehindAStreamAreNotRun() async throws {
        try await onDedicatedThread {
            let stream = ManualBodyStream()
            let counted = Counter()
            let running = try RunningHTTPServer(router: Self.router(stream, counted: counted))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "GET /stream HTTP/1.1\r\nHost: t\r\n\r\nPOST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
            )
            _ = socket.readHead()
            running.onLoop { stream.finish() }
            #expect(socket.readToEnd().isEmpty)
            #expect(counted.value.load(ordering: .relaxed) == 0, "the unanswered POST ran")
        }
    }

    /// The stream's cap on unsent bytes reaches the kernel (`TCP_NOTSENT_LOWAT`, tcp(7)): read back
    /// from the server's end of the connection.
    @Test func aStreamsUnsentByteLimitIsSetOnTheSocket() async throws {
        try await onDedicatedThread {
            let client = try StreamingClient(ManualBodyStream(unsentByteLimit: 32 * 1024))
            defer { client.running.stop() }
            let server = try #require(Self.serverDescriptor(of: client.socket, port: client.running.port))
            var value: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            #expect(getsockopt(server, Int32(IPPROTO_TCP), TCP_NOTSENT_LOWAT, &value, &length) == 0)
            #expect(value == 32 * 1024)
        }
    }

    /// A client that half-closes after its request (`shutdown(SHUT_WR)`, as `nc -N` or socat
    /// do) still reads: EPOLLRDHUP is the end of its sending, not a hang-up.
    @Test func aClientThatHalfClosesStillGetsTheStream() async throws {
        try await onDedicatedThread {
            let stream = ManualBodyStream()
            let running = try RunningHTTPServer(router: Self.router(stream))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
            _ = socket.readHead()
            shutdown(socket.descriptor, Int32(SHUT_WR))
            // On loopback the FIN has arrived when shutdown returns, so the loop handles its
            // EPOLLRDHUP before this task, queued after it.
            running.onLoop {}
            running.onLoop { stream.push(Array("frame".utf8)) }
            #expect(socket.read(count: 5) == Array("frame".utf8))
            #expect(stream.stops.load(ordering: .relaxed) == 0)
        }
    }

    /// The server's end of `client`'s connection: the socket in this process whose peer is the
    /// client's port and whose own port is the server's.
    private static func serverDescriptor(of client: TestSocket, port: Int) -> Int32? {
        guard let directory = opendir("/proc/self/fd") else { return nil }
        defer { closedir(directory) }
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            guard let descriptor = Int32(name) else { continue }
            if TestSocket.port(of: descriptor, peer: true) == client.localPort
                && TestSocket.port(of: descriptor, peer: false) == port
            {
                return descriptor
            }
        }
        return nil
    }
}
