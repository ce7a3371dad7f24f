import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A body stream the test feeds by hand: chunks pushed on the loop thread are written when
/// the connection pulls; `finish()` ends it.
private final class ManualStream: HTTPBodyStream, @unchecked Sendable {
    // @unchecked Sendable: `writer`, `queued` and `finishing` are touched only on the loop
    // thread; the test reads the atomics.
    private var writer: HTTPStreamWriter?
    private var queued: [[UInt8]] = []
    private var finishing = false
    let starts = Atomic<Int>(0)
    let stops = Atomic<Int>(0)
    /// Times the connection asked while nothing was queued.
    let waits = Atomic<Int>(0)
    let stallTimeoutMilliseconds: Int?
    let unsentByteLimit: Int?

    init(stallTimeoutMilliseconds: Int? = nil, unsentByteLimit: Int? = nil) {
        self.stallTimeoutMilliseconds = stallTimeoutMilliseconds
        self.unsentByteLimit = unsentByteLimit
    }

    func start(_ writer: HTTPStreamWriter) {
        self.writer = writer
        starts.add(1, ordering: .relaxed)
    }

    func stop() {
        writer = nil
        stops.add(1, ordering: .relaxed)
    }

    func nextOutput() -> HTTPStreamOutput {
        if !queued.isEmpty {
            defer { queued.removeAll() }
            return .chunks(queued)
        }
        if finishing { return .finished }
        waits.add(1, ordering: .relaxed)
        return .waiting
    }

    /// Queues bytes and wakes the connection (call on the loop thread).
    func push(_ bytes: [UInt8]) {
        queued.append(bytes)
        writer?.wake()
    }

    func finish() {
        finishing = true
        writer?.wake()
    }
}

/// A server whose `/stream` answers with `stream`, and a client that asked for it and read the head.
private struct StreamingClient {
    let stream: ManualStream
    let running: RunningHTTPServer
    let socket: TestSocket
    let head: String

    init(
        _ stream: ManualStream = ManualStream(), receiveBuffer: Int32? = nil,
        configure: (inout HTTPServerConfiguration) -> Void = { _ in }
    ) throws {
        self.stream = stream
        running = try RunningHTTPServer(router: HTTPStreamTests.router(stream), configure: configure)
        socket = try TestSocket(port: running.port, receiveBuffer: receiveBuffer)
        try socket.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
        head = socket.readHead() ?? ""
    }
}

@Suite struct HTTPStreamTests {
    fileprivate static func router(_ stream: ManualStream) -> Router {
        var router = Router()
        router.add(
            .get, "/stream",
            .immediate { _, _ in
                HTTPResponse(headers: ["Content-Type": "text/plain"], body: .stream(stream))
            })
        router.add(.get, "/hello", .immediate { _, _ in HTTPResponse(body: .bytes(Array("hello".utf8))) })
        return router
    }

    /// Requests that reached `POST /count` (a handler with a side effect).
    fileprivate static let counted = Atomic<Int>(0)

    /// `router(stream)` plus `GET /slow` (a task answering after 300 ms) and `POST /count`.
    fileprivate static func reviewRouter(_ stream: ManualStream) -> Router {
        var router = router(stream)
        router.add(
            .get, "/slow",
            .task { _, _ in
                try await Task.sleep(for: .milliseconds(300))
                return HTTPResponse(body: .bytes(Array("slow".utf8)))
            })
        router.add(
            .post, "/count",
            .immediate { _, _ in
                counted.add(1, ordering: .relaxed)
                return HTTPResponse(body: .bytes(Array("counted".utf8)))
            })
        return router
    }

    /// The server's open connections, read on the loop thread that owns them.
    private static func connectionCount(_ running: RunningHTTPServer) -> Int {
        let count = Atomic<Int>(-1)
        onLoop(running) { count.store(running.server.connectionCount, ordering: .relaxed) }
        return count.load(ordering: .relaxed)
    }

    /// Runs `body` on the loop thread and waits for it.
    private static func onLoop(_ running: RunningHTTPServer, _ body: @escaping @Sendable () -> Void) {
        let done = Atomic<Bool>(false)
        running.loop.execute {
            body()
            done.store(true, ordering: .releasing)
        }
        while !done.load(ordering: .acquiring) { usleep(1000) }
    }

    private static func waitUntil(seconds: Double = 3, _ condition: () -> Bool) -> Bool {
        let deadline = SystemClock().monotonicNow().advanced(by: UInt64(seconds * 1e9))
        while SystemClock().monotonicNow() < deadline {
            if condition() { return true }
            usleep(5000)
        }
        return condition()
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

            Self.onLoop(running) { stream.push(Array("first ".utf8)) }
            #expect(socket.read(count: 6) == Array("first ".utf8))
            // Nothing queued: the connection waits for a wake-up instead of spinning.
            #expect(Self.waitUntil { stream.waits.load(ordering: .relaxed) >= 2 })
            let waitsWhileIdle = stream.waits.load(ordering: .relaxed)
            usleep(100_000)
            #expect(stream.waits.load(ordering: .relaxed) == waitsWhileIdle)

            Self.onLoop(running) {
                stream.push(Array("second ".utf8))
                stream.push(Array("third".utf8))
                stream.finish()
            }
            #expect(socket.readToEnd() == Array("second third".utf8))
            #expect(Self.waitUntil { stream.stops.load(ordering: .relaxed) == 1 })
        }
    }

    @Test func aViewerThatHangsUpIsForgottenAtTheNextWrite() async throws {
        try await onDedicatedThread {
            let client = try StreamingClient()
            let (stream, running, socket) = (client.stream, client.running, client.socket)
            defer { running.stop() }
            shutdown(socket.descriptor, Int32(SHUT_RDWR))
            // The end of its sending alone could be a half-close: the stream goes on...
            usleep(100_000)
            #expect(stream.stops.load(ordering: .relaxed) == 0)
            // ...until the client's reset answers the next bytes.
            Self.onLoop(running) { stream.push(Array("frame".utf8)) }
            #expect(Self.waitUntil(seconds: 2) { stream.stops.load(ordering: .relaxed) == 1 })
            #expect(Self.waitUntil { Self.connectionCount(running) == 0 })
        }
    }

    @Test func headGetsTheHeadAndNeverStartsTheStream() async throws {
        try await onDedicatedThread {
            let stream = ManualStream()
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
            let stream = ManualStream()
            let running = try RunningHTTPServer(router: Self.router(stream))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "GET /hello HTTP/1.1\r\nHost: t\r\n\r\nGET /stream HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
            )
            #expect(socket.readResponse()?.body == Array("hello".utf8))
            _ = socket.readHead()
            Self.onLoop(running) {
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
            let client = try StreamingClient(ManualStream(stallTimeoutMilliseconds: 300), receiveBuffer: 4096)
            {
                $0.writeTimeoutMilliseconds = 60_000
            }
            let (stream, running) = (client.stream, client.running)
            defer { running.stop() }
            let chunk = [UInt8](repeating: 0x55, count: 1 << 20)
            // Never read: a few megabytes fill both socket buffers, then writing stalls.
            for _ in 0..<8 { Self.onLoop(running) { stream.push(chunk) } }
            let start = SystemClock().monotonicNow()
            #expect(Self.waitUntil(seconds: 5) { stream.stops.load(ordering: .relaxed) == 1 })
            #expect(SystemClock().monotonicNow().nanoseconds(since: start) < 3_000_000_000)
            #expect(Self.waitUntil { Self.connectionCount(running) == 0 })
        }
    }

    @Test func shutdownEndsStreamsInsteadOfWaitingForThem() async throws {
        try await onDedicatedThread {
            let client = try StreamingClient { $0.shutdownGraceMilliseconds = 30_000 }
            let (stream, running, socket) = (client.stream, client.running, client.socket)
            let start = SystemClock().monotonicNow()
            running.stop()
            #expect(SystemClock().monotonicNow().nanoseconds(since: start) < 2_000_000_000)
            #expect(stream.stops.load(ordering: .relaxed) == 1)
            #expect(socket.readToEnd().isEmpty)
        }
    }

    // MARK: Found in review

    /// A stream whose response is reached only after shutdown began (it waited behind a slower
    /// pipelined answer) gets its head and the close, and does not hold the shutdown.
    @Test func aStreamReachedDuringShutdownDoesNotHoldTheShutdown() async throws {
        try await onDedicatedThread {
            let stream = ManualStream()
            // A long grace, so a shutdown held by the stream stands out from a busy test run.
            let running = try RunningHTTPServer(router: Self.reviewRouter(stream)) {
                $0.shutdownGraceMilliseconds = 20_000
            }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /slow HTTP/1.1\r\nHost: t\r\n\r\nGET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
            // A client that reads everything and closes when the server does.
            let received = Mutex<[UInt8]>([])
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
            usleep(100_000)  // both parsed; /slow still running
            let start = SystemClock().monotonicNow()
            running.stop()
            let elapsed = SystemClock().monotonicNow().nanoseconds(since: start)
            reader.join()
            #expect(elapsed < 10_000_000_000, "shutdown took \(elapsed / 1_000_000) ms")
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
            let stream = ManualStream()
            let running = try RunningHTTPServer(router: Self.reviewRouter(stream))
            defer { running.stop() }
            let before = Self.counted.load(ordering: .relaxed)
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "GET /stream HTTP/1.1\r\nHost: t\r\n\r\nPOST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"
            )
            _ = socket.readHead()
            Self.onLoop(running) { stream.finish() }
            #expect(socket.readToEnd().isEmpty)
            #expect(Self.counted.load(ordering: .relaxed) == before, "the unanswered POST ran")
        }
    }

    /// The stall clock follows the client reading, not only the kernel accepting bytes: with
    /// `TCP_NOTSENT_LOWAT` the kernel accepts nothing more until the client has drained nearly all
    /// of a frame, which a client on a slow link may take longer than the stall timeout to do
    /// while reading all the time.
    @Test func aClientThatReadsSteadilyIsNotDroppedAsStalled() async throws {
        try await onDedicatedThread {
            let client = try StreamingClient(
                ManualStream(stallTimeoutMilliseconds: 500, unsentByteLimit: 32 * 1024), receiveBuffer: 4096)
            let (stream, running, socket) = (client.stream, client.running, client.socket)
            defer { running.stop() }
            // The client reads 1 KiB every 50 ms (20 KiB/s), never pausing longer than that.
            let reading = Atomic<Bool>(true)
            let received = Atomic<Int>(0)
            let descriptor = socket.descriptor
            let reader = try OSThread.spawn(name: "slow-reader") {
                var buffer = [UInt8](repeating: 0, count: 1024)
                while reading.load(ordering: .relaxed) {
                    let n = buffer.withUnsafeMutableBytes {
                        Glibc.recv(descriptor, $0.baseAddress, $0.count, 0)
                    }
                    if n <= 0 { break }
                    received.add(n, ordering: .relaxed)
                    usleep(50_000)
                }
            }
            // One 100 KiB frame (a real camera's at 720p), then nothing more.
            Self.onLoop(running) { stream.push([UInt8](repeating: 0x55, count: 100 * 1024)) }
            for _ in 0..<40 where stream.stops.load(ordering: .relaxed) == 0 { usleep(100_000) }
            #expect(
                stream.stops.load(ordering: .relaxed) == 0,
                "dropped while reading steadily, after \(received.load(ordering: .relaxed)) bytes")
            reading.store(false, ordering: .relaxed)
            shutdown(descriptor, Int32(SHUT_RDWR))
            reader.join()
        }
    }

    /// A client that half-closes after its request (`shutdown(SHUT_WR)`, as `nc -N` or socat
    /// do) still reads: EPOLLRDHUP is the end of its sending, not a hang-up.
    @Test func aClientThatHalfClosesStillGetsTheStream() async throws {
        try await onDedicatedThread {
            let stream = ManualStream()
            let running = try RunningHTTPServer(router: Self.router(stream))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /stream HTTP/1.1\r\nHost: t\r\n\r\n")
            shutdown(socket.descriptor, Int32(SHUT_WR))
            _ = socket.readHead()
            usleep(100_000)
            Self.onLoop(running) { stream.push(Array("frame".utf8)) }
            #expect(socket.read(count: 5) == Array("frame".utf8))
        }
    }
}
