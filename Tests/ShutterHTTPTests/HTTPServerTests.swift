import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The server over real sockets on 127.0.0.1, without the daemon: what only a real socket
/// shows (sendfile, a slow reader's socket buffers, the kernel's view of open files), with
/// handlers that wait at gates the test opens instead of sleeping. The decisions themselves are
/// tested byte by byte in `HTTPConnectionStateMachineTests`.
// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct HTTPServerTests {
    /// `gates[n]` holds `GET /gated?n=n`; `finished` counts gated handlers that have returned;
    /// `files` counts `GET /file` dispatches.
    private static func router(
        gates: [HandlerGate] = [], finished: HandlerGate = HandlerGate(), files: HandlerGate = HandlerGate()
    ) -> Router {
        var router = Router()
        router.add(.get, "/hello", .immediate { _, _ in HTTPResponse(body: .bytes(Array("hello".utf8))) })
        router.add(
            .get, "/peer",
            .immediate { request, _ in
                let peer = request.peer.map { "\($0.host) loopback=\($0.isLoopback)" } ?? "none"
                return HTTPResponse(body: .bytes(Array(peer.utf8)))
            })
        router.add(.get, "/big", .immediate { _, _ in HTTPResponse(body: .bytes(bigBody)) })
        router.add(
            .get, "/gated",
            .task { request, _ in
                // Finishes when the test says: responses must still come in request order.
                let n = Int(request.queryValue("n") ?? "0") ?? 0
                await gates[n].pass()
                finished.arrive()
                return HTTPResponse(body: .bytes(Array("gated \(n)".utf8)))
            })
        router.add(.get, "/later", .task { _, _ in HTTPResponse(body: .bytes(Array("later".utf8))) })
        router.add(
            .get, "/file",
            .immediate { _, _ in
                files.arrive()
                let descriptor = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)
                return HTTPResponse(
                    body: .file(
                        FileRegion(handle: FileRegion.Handle(descriptor: descriptor), offset: 0, length: 4096)
                    ))
            })
        router.add(
            .post, "/echo", .task { request, _ in HTTPResponse(body: .bytes(request.body)) })
        router.add(
            .get, "/maybe",
            .immediateOrTask(
                immediate: { request, _ in
                    switch request.queryValue("on") {
                    case "loop": HTTPResponse(body: .bytes(Array("loop".utf8)))
                    case "error": throw HTTPError(.badRequest, detail: "bad")
                    default: nil
                    }
                },
                task: { _, _ in HTTPResponse(body: .bytes(Array("task".utf8))) }))
        router.add(
            .get, "/deferred",
            .immediateOrDeferred(
                immediate: { request, _ in
                    request.queryValue("on") == "loop" ? HTTPResponse(body: .bytes(Array("loop".utf8))) : nil
                },
                deferred: { request, _, responder in
                    switch request.queryValue("on") {
                    case "throw": throw HTTPError(.badRequest, detail: "refused before handing over")
                    case "fail":
                        try OSThread.spawn(name: "test-answer") {
                            responder.fail(SystemError(errno: EIO, call: "secret internal call"))
                        }.detach()
                    default:
                        // Answered from a thread of its own, later, and twice: the first answer counts.
                        try OSThread.spawn(name: "test-answer") {
                            usleep(20_000)
                            responder.respond(HTTPResponse(body: .bytes(Array("thread".utf8))))
                            responder.respond(HTTPResponse(body: .bytes(Array("again".utf8))))
                        }.detach()
                    }
                }))
        router.add(
            .get, "/fail",
            .task { _, _ in throw SystemError(errno: EIO, call: "secret internal call") })
        router.add(
            .get, "/fault",
            .task { _, _ in
                throw HTTPError(.internalServerError, detail: "see the log", headers: ["X-Cause": "disk"])
            })
        router.add(.get, "/refused", .task { _, _ in throw HTTPError(.badRequest, detail: "bad input") })
        return router
    }

    /// 8 MB, far beyond the socket buffers; built once, by the test, not on the loop (a debug
    /// build takes seconds to, and the loop would serve nobody meanwhile).
    private static let bigBody = (0..<8 * 1024 * 1024).map { UInt8(truncatingIfNeeded: $0 * 7) }

    @Test func pipelinedResponsesComeInRequestOrder() async throws {
        try await onDedicatedThread {
            let gates = [HandlerGate(), HandlerGate()]
            let finished = HandlerGate()
            let running = try RunningHTTPServer(router: Self.router(gates: gates, finished: finished))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "GET /gated?n=0 HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
                    + "GET /gated?n=1 HTTP/1.1\r\nHost: t\r\n\r\nGET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            )
            #expect(gates[0].waitForArrivals(1) && gates[1].waitForArrivals(1))
            // The second slow request finishes first, and its answer reaches the loop first.
            gates[1].open()
            #expect(finished.waitForArrivals(1))
            gates[0].open()
            var bodies: [String] = []
            while let response = socket.readResponse() {
                bodies.append(String(decoding: response.body, as: UTF8.self))
            }
            #expect(bodies == ["gated 0", "hello", "gated 1", "hello"])
        }
    }

    @Test func handlersSeeTheClientsAddress() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /peer HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(socket.readResponse()?.body == Array("127.0.0.1 loopback=true".utf8))
        }
    }

    @Test func largeBodiesAreWrittenAsTheClientDrains() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            // The server must queue the body and resume on EPOLLOUT.
            let body = Self.bigBody
            let slowReader = try TestSocket(port: running.port, receiveBuffer: 4096)
            try slowReader.send("GET /big HTTP/1.1\r\nHost: t\r\n\r\n")
            // While that response is stuck, another client is served at once.
            let other = try TestSocket(port: running.port)
            try other.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(other.readResponse()?.body == Array("hello".utf8))
            let response = try #require(slowReader.readResponse())
            #expect(response.body == body)
        }
    }

    @Test func fileBodiesAreSentFromTheFile() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /file HTTP/1.1\r\nHost: t\r\n\r\nGET /file HTTP/1.1\r\nHost: t\r\n\r\n")
            let descriptor = open("/proc/self/exe", O_RDONLY | O_CLOEXEC)
            defer { closeDescriptor(descriptor) }
            var expected = [UInt8](repeating: 0, count: 4096)
            #expect(expected.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, 4096) } == 4096)
            #expect(socket.readResponse()?.body == expected)
            #expect(socket.readResponse()?.body == expected)
        }
    }

    @Test func immediateOrTaskFallsBackToTheTaskOnlyWhenTheLoopDeclines() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "GET /maybe?on=loop HTTP/1.1\r\nHost: t\r\n\r\nGET /maybe HTTP/1.1\r\nHost: t\r\n\r\n"
                    + "GET /maybe?on=error HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            var answers: [String] = []
            while let response = socket.readResponse() {
                answers.append(
                    "\(response.status) \(String(decoding: response.body, as: UTF8.self).prefix(4))")
            }
            #expect(answers.count == 3)
            #expect(answers.prefix(2) == ["200 loop", "200 task"])
            #expect(answers.last?.hasPrefix("400") == true)
        }
    }

    /// A deferred answer comes from another thread, in its request's place among pipelined ones;
    /// a throw before the hand-over and a failure after it are answered as a handler's errors.
    @Test func deferredHandlersAnswerFromTheirOwnThreadInOrder() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "GET /deferred HTTP/1.1\r\nHost: t\r\n\r\nGET /deferred?on=loop HTTP/1.1\r\nHost: t\r\n\r\n"
                    + "GET /deferred?on=throw HTTP/1.1\r\nHost: t\r\n\r\n"
                    + "GET /deferred?on=fail HTTP/1.1\r\nHost: t\r\n\r\n"
                    + "GET /deferred HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            var answers: [String] = []
            while let response = socket.readResponse() {
                answers.append("\(response.status) \(String(decoding: response.body, as: UTF8.self))")
            }
            #expect(answers.count == 5)
            #expect(answers.prefix(2) == ["200 thread", "200 loop"])
            #expect(answers.dropFirst(2).first?.hasPrefix("400") == true)
            #expect(answers.dropFirst(3).first?.hasPrefix("500") == true)
            #expect(answers.dropFirst(3).first?.contains("secret") == false)
            #expect(answers.last == "200 thread")
        }
    }

    @Test func unknownErrorsBecome500WithoutInternals() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /fail HTTP/1.1\r\nHost: t\r\n\r\n")
            let response = try #require(socket.readResponse())
            #expect(response.status == 500)
            let body = String(decoding: response.body, as: UTF8.self)
            #expect(body.contains("\"error\""))
            #expect(!body.contains("secret"))
        }
    }

    /// A 500 is the server's fault whatever made it: logged, with its cause, while the client gets
    /// only the detail. A client's mistake (a 400) is not logged.
    @Test func every500IsLoggedAndNo400Is() async throws {
        try await onDedicatedThread {
            let sink = RecordingLogSink()
            let running = try RunningHTTPServer(router: Self.router(), logSink: sink)
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "GET /fault HTTP/1.1\r\nHost: t\r\n\r\nGET /refused HTTP/1.1\r\nHost: t\r\n\r\n"
                    + "GET /fail HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            var statuses: [Int] = []
            while let response = socket.readResponse() { statuses.append(response.status) }
            #expect(statuses == [500, 400, 500])
            let lines = sink.lines
            #expect(lines.count == 2, "\(lines)")
            #expect(lines.contains { $0.contains("request failed") && $0.contains("see the log") })
            #expect(lines.contains { $0.contains("handler failed") && $0.contains("secret internal call") })
        }
    }

    /// Access lines are not handed to the log writer at every turn of the loop (that was most of
    /// the log's cost at high rates) but on the tick, together; a shutdown writes what is left.
    @Test func accessLinesLeaveTogetherOnTheTickAndAtShutdown() async throws {
        try await onDedicatedThread {
            let sink = RecordingLogSink()
            let running = try RunningHTTPServer(router: Self.router(), logSink: sink, logLevel: .info) {
                $0.logRequests = true
            }
            let socket = try TestSocket(port: running.port)
            // Each answered before the next is sent: two turns of the loop at least.
            for _ in 0..<2 {
                try socket.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(socket.readResponse()?.status == 200)
            }
            running.onLoop {}
            let accessLines = {
                sink.lines.filter { $0.contains(" request ") && $0.contains("target=/hello") }
            }
            #expect(accessLines().isEmpty, "waiting for the tick")
            running.advance(byMilliseconds: 250)
            #expect(accessLines().count == 2)
            #expect(sink.writes == 1, "both lines in one batch")
            try socket.send("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            #expect(socket.readResponse()?.status == 200)
            running.beginShutdown()
            #expect(running.waitForShutdown())
            #expect(accessLines().count == 3, "the last line written before the loop stops")
            running.stop()
        }
    }

    @Test func postBodiesAndContinue() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(
                "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
            let interim = try #require(socket.readResponse())
            #expect(interim.status == 100)
            try socket.send("abcde")
            let response = try #require(socket.readResponse())
            #expect(response.status == 200)
            #expect(response.body == Array("abcde".utf8))
        }
    }

    @Test func headGetsHeadersWithoutBody() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("HEAD /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            let raw = String(decoding: socket.readToEnd(), as: UTF8.self)
            #expect(raw.contains("Content-Length: 5\r\n"))
            #expect(raw.hasSuffix("\r\n\r\n"))
        }
    }

    /// A server holding at most `connections` connections, `perPeer` from one address, and a sink
    /// for its log from notice up (the limits' episodes are logged there).
    private static func serverWithLimits(connections: Int, perPeer: Int) throws -> (
        RunningHTTPServer, RecordingLogSink
    ) {
        let sink = RecordingLogSink()
        let running = try RunningHTTPServer(router: router(), logSink: sink, logLevel: .notice) {
            $0.maxConnections = connections
            $0.maxConnectionsPerPeer = perPeer
        }
        return (running, sink)
    }

    @Test func oneClientCannotTakeEverySlot() async throws {
        try await onDedicatedThread {
            let (running, sink) = try Self.serverWithLimits(connections: 10, perPeer: 2)
            defer { running.stop() }
            let first = try TestSocket(port: running.port)
            let second = try TestSocket(port: running.port)
            for socket in [first, second] {
                try socket.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(socket.readResponse()?.status == 200)
            }
            // Over the client's limit, though far under max_connections: refused with a 503 in JSON.
            for _ in 0..<3 {
                let refused = try TestSocket(port: running.port)
                let response = try #require(refused.readResponse())
                #expect(response.status == 503)
                #expect(response.head.contains("Content-Type: application/json"))
                let body = String(decoding: response.body, as: UTF8.self)
                #expect(body.contains(#""error":"service unavailable""#))
                #expect(body.contains("too many connections from 127.0.0.1 (at most 2)"))
            }
            // Another address is another client, served while the first is refused.
            let other = try TestSocket(port: running.port, source: 0x7F00_0002)
            try other.send("GET /peer HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(other.readResponse()?.body == Array("127.0.0.2 loopback=true".utf8))
            // One line for the whole episode, and one when it ends.
            #expect(sink.lines.filter { $0.contains("over its limit") }.count == 1)
            _ = Glibc.shutdown(first.descriptor, Int32(SHUT_RDWR))
            // The server hears of the close on its loop, in its own time.
            for _ in 0..<1000 where running.connectionCount > 2 { usleep(1000) }
            #expect(running.connectionCount == 2)
            let again = try TestSocket(port: running.port)
            try again.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(again.readResponse()?.status == 200)
            #expect(
                sink.lines.filter { $0.contains("accepted from a client again") && $0.contains("refused=3") }
                    .count == 1)
        }
    }

    @Test func refusalsOverTheConnectionLimitAreLoggedOncePerEpisode() async throws {
        try await onDedicatedThread {
            let (running, sink) = try Self.serverWithLimits(connections: 2, perPeer: 2)
            defer { running.stop() }
            let held = try [TestSocket(port: running.port), TestSocket(port: running.port)]
            for socket in held {
                try socket.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(socket.readResponse()?.status == 200)
            }
            for _ in 0..<5 {
                #expect(try TestSocket(port: running.port).readResponse()?.status == 503)
            }
            #expect(sink.lines.filter { $0.contains("refused: over limit") }.count == 1)
            _ = Glibc.shutdown(held[0].descriptor, Int32(SHUT_RDWR))
            for _ in 0..<1000 where running.connectionCount > 1 { usleep(1000) }
            #expect(
                sink.lines.filter { $0.contains("connections accepted again") && $0.contains("refused=5") }
                    .count == 1)
        }
    }

    /// Whether the server has closed `socket` (its FIN is waiting), without blocking.
    private static func closedByServer(_ socket: TestSocket) -> Bool {
        var byte: UInt8 = 0
        return Glibc.recv(socket.descriptor, &byte, 1, Int32(MSG_DONTWAIT | MSG_PEEK)) == 0
    }

    @Test func aFullServerClosesAWaitingConnectionOfTheClientHoldingTheMost() async throws {
        try await onDedicatedThread {
            let (running, sink) = try Self.serverWithLimits(connections: 4, perPeer: 4)
            defer { running.stop() }
            // 127.0.0.2 takes every slot and says nothing (silent connections).
            let silent = try (0..<4).map { _ in try TestSocket(port: running.port, source: 0x7F00_0002) }
            for _ in 0..<1000 where running.connectionCount < 4 { usleep(1000) }
            #expect(running.connectionCount == 4)

            // Another client is served, not refused: one of the silent connections made room.
            let honest = try TestSocket(port: running.port)
            try honest.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(honest.readResponse()?.status == 200)
            #expect(silent.filter(Self.closedByServer).count == 1)
            #expect(running.connectionCount == 4)

            // The silent client cannot take its slot back from the honest one: it holds 3, and
            // after a swap it would hold 3 against 127.0.0.1's 0.
            let again = try TestSocket(port: running.port, source: 0x7F00_0002)
            #expect(again.readResponse()?.status == 503)
            #expect(silent.filter(Self.closedByServer).count == 1)

            // A third address still gets in (127.0.0.2 holds 3 > 0 + 1), then a fourth (2 > 1);
            // a fifth would leave 127.0.0.2 with fewer than itself: refused.
            var newcomers: [TestSocket] = []  // kept open: each holds its slot
            for source: UInt32 in [0x7F00_0003, 0x7F00_0004] {
                let newcomer = try TestSocket(port: running.port, source: source)
                try newcomer.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
                #expect(newcomer.readResponse()?.status == 200)
                newcomers.append(newcomer)
            }
            #expect(silent.filter(Self.closedByServer).count == 3)
            #expect(try TestSocket(port: running.port, source: 0x7F00_0005).readResponse()?.status == 503)
            // The honest client's connection, waiting between requests, is still open and served.
            try honest.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(honest.readResponse()?.status == 200)
            #expect(sink.lines.filter { $0.contains("server full: closing waiting connections") }.count == 1)
            #expect(newcomers.allSatisfy { !Self.closedByServer($0) })

            // The episode ends when a connection closes by itself.
            _ = Glibc.shutdown(honest.descriptor, Int32(SHUT_RDWR))
            for _ in 0..<1000 where running.connectionCount > 3 { usleep(1000) }
            for _ in 0..<1000 where !sink.lines.contains(where: { $0.contains("connections accepted again") })
            {
                usleep(1000)
            }
            #expect(
                sink.lines.filter {
                    $0.contains("connections accepted again") && $0.contains("closed_to_make_room=3")
                        && $0.contains("refused=2")
                }.count == 1)
        }
    }

    @Test func connectionsThatOweAnAnswerAreNeverClosedToMakeRoom() async throws {
        try await onDedicatedThread {
            let gate = HandlerGate()
            let running = try RunningHTTPServer(router: Self.router(gates: [gate])) {
                $0.maxConnections = 2
                $0.maxConnectionsPerPeer = 2
            }
            defer { running.stop() }
            // Both of 127.0.0.2's connections have a request in its handler.
            let busy = try (0..<2).map { _ in try TestSocket(port: running.port, source: 0x7F00_0002) }
            for socket in busy { try socket.send("GET /gated?n=0 HTTP/1.1\r\nHost: t\r\n\r\n") }
            #expect(gate.waitForArrivals(2))
            // Nothing can be closed without losing an answer: the newcomer is refused.
            #expect(try TestSocket(port: running.port).readResponse()?.status == 503)
            gate.open()
            for socket in busy {
                #expect(socket.readResponse()?.body == Array("gated 0".utf8))
            }
            // Now both wait between requests: one makes room.
            let honest = try TestSocket(port: running.port)
            try honest.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(honest.readResponse()?.status == 200)
            #expect(busy.filter(Self.closedByServer).count == 1)
        }
    }

    @Test func theDefaultPerClientLimitIsAQuarterOfTheConnections() {
        var configuration = HTTPServerConfiguration()
        #expect(configuration.effectiveMaxConnectionsPerPeer == 256)
        configuration.maxConnections = 2
        #expect(configuration.effectiveMaxConnectionsPerPeer == 1)
        configuration.maxConnectionsPerPeer = 5
        #expect(configuration.effectiveMaxConnectionsPerPeer == 5)
    }

    @Test func idleConnectionsAreClosedOnTheServersClock() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router()) { $0.idleTimeoutMilliseconds = 150 }
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(socket.readResponse()?.status == 200)
            running.advance(byMilliseconds: 150)
            #expect(running.connectionCount == 1)
            running.advance(byMilliseconds: 1)
            // The server closed it: the read ends with nothing, instead of timing out.
            #expect(socket.readUntilClosed() == [])
        }
    }

    @Test func shutdownWaitsForInFlightResponses() async throws {
        try await onDedicatedThread {
            let gate = HandlerGate()
            let running = try RunningHTTPServer(router: Self.router(gates: [gate]))
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /gated?n=0 HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(gate.waitForArrivals(1))
            running.beginShutdown()
            gate.open()
            let raw = String(decoding: socket.readToEnd(), as: UTF8.self)
            #expect(raw.hasPrefix("HTTP/1.1 200 OK"))
            #expect(raw.contains("Connection: close"))
            #expect(raw.hasSuffix("gated 0"))
            running.stop()
        }
    }

    @Test func thousandsOfPipelinedRequestsBehindSlowOnesAreAllAnsweredInOrder() async throws {
        try await onDedicatedThread {
            let gate = HandlerGate()
            let running = try RunningHTTPServer(router: Self.router(gates: [gate]))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            // Sixteen slow task requests fill the pipeline, then thousands of immediate ones
            // wait in the parser's buffer: draining them must neither recurse nor stall.
            var stream = String(repeating: "GET /gated?n=0 HTTP/1.1\r\nHost: t\r\n\r\n", count: 16)
            stream += String(repeating: "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n", count: 5000)
            stream += "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
            try socket.send(stream)
            #expect(gate.waitForArrivals(16))
            gate.open()
            var bodies: [String] = []
            while let response = socket.readResponse() {
                bodies.append(String(decoding: response.body, as: UTF8.self))
            }
            #expect(bodies.count == 5017)
            #expect(bodies.prefix(16).allSatisfy { $0 == "gated 0" })
            #expect(bodies.dropFirst(16).allSatisfy { $0 == "hello" })
        }
    }

    @Test func aClientThatNeverReadsCannotMakeTheServerHoldFilesWithoutBound() async throws {
        try await onDedicatedThread {
            let files = HandlerGate()
            let running = try RunningHTTPServer(router: Self.router(files: files))
            defer { running.stop() }
            let socket = try TestSocket(port: running.port, receiveBuffer: 4096)
            try socket.send(String(repeating: "GET /file HTTP/1.1\r\nHost: t\r\n\r\n", count: 2000))
            // The pipeline is full once sixteen are dispatched; the loop round trip lets the server
            // finish the read that dispatched them (where an unbounded one would open the rest).
            #expect(files.waitForArrivals(16))
            running.onLoop {}
            // At most one open file per pipelined slot, not one per request sent.
            let held = openFilesOfThisExecutable()
            #expect(held <= 16 + 1, "held \(held) files")
            // And reading drains everything.
            var count = 0
            while count < 2000, let response = socket.readResponse() {
                #expect(response.body.count == 4096)
                count += 1
            }
            #expect(count == 2000)
        }
    }

    @Test func aHalfClosedClientGetsEveryAnswer() async throws {
        try await onDedicatedThread {
            let running = try RunningHTTPServer(router: Self.router())
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send(String(repeating: "GET /later HTTP/1.1\r\nHost: t\r\n\r\n", count: 40))
            shutdown(socket.descriptor, Int32(SHUT_WR))
            var count = 0
            while socket.readResponse() != nil { count += 1 }
            #expect(count == 40)
        }
    }

    @Test func shutdownAnswersEveryRequestAlreadyStarted() async throws {
        try await onDedicatedThread {
            let gate = HandlerGate()
            let running = try RunningHTTPServer(router: Self.router(gates: [gate]))
            let socket = try TestSocket(port: running.port)
            try socket.send(String(repeating: "GET /gated?n=0 HTTP/1.1\r\nHost: t\r\n\r\n", count: 4))
            #expect(gate.waitForArrivals(4))
            running.beginShutdown()
            gate.open()
            var heads: [String] = []
            while let response = socket.readResponse() { heads.append(response.head) }
            #expect(heads.count == 4)
            // Only the last one announces the close.
            #expect(heads.last?.contains("Connection: close") == true)
            #expect(heads.dropLast().allSatisfy { !$0.contains("Connection: close") })
            // The server lingers for the client's close, then the shutdown completes.
            shutdown(socket.descriptor, Int32(SHUT_RDWR))
            #expect(running.waitForShutdown())
            running.stop()
        }
    }
}

/// Descriptors open on this test executable, which only the `/file` route opens
/// (other tests run in parallel and open descriptors of their own).
private func openFilesOfThisExecutable() -> Int {
    func target(_ path: String) -> String {
        var buffer = [CChar](repeating: 0, count: 4096)
        let n = readlink(path, &buffer, buffer.count - 1)
        return n > 0 ? String(decoding: buffer[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
    }
    let executable = target("/proc/self/exe")
    guard let directory = opendir("/proc/self/fd") else { return -1 }
    defer { closedir(directory) }
    var count = 0
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if target("/proc/self/fd/\(name)") == executable { count += 1 }
    }
    return count
}
