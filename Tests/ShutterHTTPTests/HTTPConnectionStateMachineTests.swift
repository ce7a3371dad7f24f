import ShutterSystem
import ShutterTestSupport
import Synchronization
import Testing

@testable import ShutterHTTP

#if canImport(Glibc)
    import Glibc
#endif

private typealias Machine = HTTPConnectionStateMachine

/// A connection with no socket, in the manner of swift-nio's `EmbeddedChannel`: the test puts
/// bytes in, the harness carries out the machine's actions against a simulated socket, and the
/// test reads the exact bytes that came out.
///
/// `.immediate` handlers run at once as the driver runs them; `.task` handlers are only
/// recorded, and the test answers them with `complete` in whatever order it likes.
private final class EmbeddedConnection {
    var machine: Machine
    let clock: ManualClock
    /// Bytes the client sent that the connection has not read yet.
    var inbound: [UInt8] = []
    var clientEndedSending = false
    /// Bytes the socket takes before it reports full; nil takes everything.
    var socketRoom: Int?
    /// Every byte written to the socket, in order.
    var written: [UInt8] = []
    /// Requests whose handler ran or was started, in dispatch order.
    var dispatched: [(id: UInt64, target: String, accessExpiresAt: Int64?)] = []
    /// `.task` requests waiting for `complete`.
    var pendingTasks: [UInt64] = []
    var interest: Machine.Interest = [.read, .readHangUp]
    var halfClosed = false
    var closed: Machine.CloseReason?
    var startedStreams = 0
    var pulls = 0
    var unsentByteLimit: Int?
    var accessLog: [Machine.AccessLogEntry] = []
    /// Whether the last `sendmsg` asked for `MSG_MORE`.
    var sentWithMore: [Bool] = []
    var sendfileCalls = 0
    /// Actions carried out by the last `run()`.
    var lastRunActions = 0
    /// The kinds of every action carried out, in order.
    var actionKinds: [String] = []
    /// The most one read takes: small, so requests arrive split across reads.
    let readSize: Int
    /// TLS: what each handshake step reports, in order, once it has taken the client's bytes
    /// (a step with nothing scripted waits for more to read).
    var handshakeSteps: [HandshakeStep] = []
    /// TLS: the bytes each handshake step took from the client.
    var handshakeBytes: [[UInt8]] = []
    /// TLS: the driver was told to speak plain text.
    var droppedTLS = false
    /// TLS: inbound bytes that sit decrypted in the transport, where no readiness announces them
    /// (reads report `moreBuffered` while any are left).
    var transportHolds = false

    /// What a simulated handshake step does.
    enum HandshakeStep {
        case wantsRead, wantsWrite, finished, failed
    }

    init(
        router: Router, clock: ManualClock = ManualClock(), readSize: Int = 64, tls: Bool = false,
        policy: (any HTTPRequestPolicy)? = nil, peer: PeerAddress? = nil,
        configure: (inout HTTPServerConfiguration) -> Void = { _ in }
    ) {
        self.readSize = readSize
        var configuration = HTTPServerConfiguration()
        configuration.logRequests = false
        configure(&configuration)
        self.clock = clock
        machine = Machine(
            configuration: configuration, router: router, policy: policy,
            dateCache: HTTPDateCache(clock: clock),
            requestIDs: HTTPRequestIDGenerator(), readBufferSize: readSize, now: clock.monotonicNow(),
            peer: peer, tls: tls)
    }

    var now: MonotonicInstant { clock.monotonicNow() }

    /// The client sends `text`; the socket reports it readable.
    func receive(_ text: String) { receive(Array(text.utf8)) }

    func receive(_ bytes: [UInt8]) {
        inbound += bytes
        machine.socketReported(.readable)
        run()
    }

    /// The client half-closes (`shutdown(SHUT_WR)`).
    func clientEndsSending() {
        clientEndedSending = true
        machine.socketReported([.readable, .peerClosedSending])
        run()
    }

    /// The socket takes `room` more bytes (nil: any number) and reports it writable.
    func drain(room: Int? = nil) {
        socketRoom = room
        machine.socketReported(.writable)
        run()
    }

    /// The task handling request `id` answers.
    func complete(_ id: UInt64, _ body: String) {
        pendingTasks.removeAll { $0 == id }
        machine.handlerFinished(id: id, response: HTTPResponse(body: .bytes(Array(body.utf8))))
        run()
    }

    /// Virtual time passes, and the loop's tick runs.
    func advance(milliseconds: Int, unacknowledgedBytes: Int? = nil) {
        clock.advance(by: UInt64(milliseconds) * 1_000_000)
        machine.tick(now: now, unacknowledgedBytes: unacknowledgedBytes)
        run()
    }

    func streamWoke() {
        machine.streamWoke(now: now)
        run()
    }

    func beginShutdown() {
        machine.beginShutdown()
        run()
    }

    /// What was written since the last call, as text.
    func takeWritten() -> String {
        defer { written.removeAll() }
        return String(decoding: written, as: UTF8.self)
    }

    /// Carries out actions until the machine waits for an event, reporting readiness again
    /// while it lasts, as level-triggered epoll does.
    func run() {
        lastRunActions = 0
        while true {
            while let action = machine.nextAction(now: now) {
                lastRunActions += 1
                precondition(lastRunActions < 10_000_000, "the machine does not settle")
                perform(action)
            }
            var ready: Machine.SocketEvents = []
            if interest.contains(.read) && ((!inbound.isEmpty && !transportHolds) || clientEndedSending) {
                ready.insert(.readable)
            }
            if !interest.isDisjoint(with: [.read, .readHangUp]) && clientEndedSending {
                ready.insert(.peerClosedSending)
            }
            if interest.contains(.write) && (socketRoom ?? 1) > 0 { ready.insert(.writable) }
            if ready.isEmpty || closed != nil { return }
            lastRunActions += 1
            machine.socketReported(ready)
        }
    }

    private func perform(_ action: Machine.Action) {
        actionKinds.append(String(describing: action).prefix { $0 != "(" }.description)
        switch action {
        case .read:
            if !inbound.isEmpty {
                let count = min(readSize, inbound.count)
                let bytes = Array(inbound.prefix(count))
                inbound.removeFirst(count)
                let more = transportHolds && !inbound.isEmpty
                bytes.withUnsafeBytes { machine.bytesRead($0, now: now, moreBuffered: more) }
            } else if clientEndedSending {
                machine.peerFinishedSending()
            } else {
                machine.readWouldBlock()
            }
        case .writeBytes(let batch):
            var bytes: [UInt8] = []
            for index in batch.range {
                if let chunk = machine.chunk(at: index) { bytes += chunk.bytes[chunk.offset...] }
            }
            sentWithMore.append(batch.fileFollows)
            accept(bytes)
        case .sendFile(let region, let offset, let count):
            let take = min(count, socketRoom ?? count)
            var bytes = [UInt8](repeating: 0, count: take)
            let read = bytes.withUnsafeMutableBytes {
                pread(region.handle.descriptor, $0.baseAddress, take, off_t(offset))
            }
            if take == 0 {
                machine.writeWouldBlock()
            } else if read <= 0 {
                // sendfile(2) returns 0 at the end of the file.
                machine.wrote(0, now: now)
            } else {
                sendfileCalls += 1
                accept(Array(bytes.prefix(read)))
            }
        case .dispatch(let id, let request, let handler, let parameters):
            dispatched.append((id, request.target, request.accessExpiresAt))
            switch handler {
            case .immediate(let handler):
                let response =
                    (try? handler(request, parameters)) ?? HTTPResponse(status: .internalServerError)
                machine.handlerFinished(id: id, response: response)
            case .task:
                pendingTasks.append(id)
            case .immediateOrTask(let immediate, _), .immediateOrDeferred(let immediate, _):
                if let response = try? immediate(request, parameters) {
                    machine.handlerFinished(id: id, response: response)
                } else {
                    pendingTasks.append(id)
                }
            }
        case .startStream(_, let limit):
            startedStreams += 1
            unsentByteLimit = limit
        case .pullStream(let stream):
            pulls += 1
            let output = stream.nextOutput()
            machine.streamProduced(output)
        case .stopStream(let stream):
            stream.stop()
        case .logAccess(let entry):
            accessLog.append(entry)
        case .halfClose:
            halfClosed = true
        case .setInterest(let wanted):
            interest = wanted
        case .close(let reason, let stream):
            precondition(closed == nil, "closed twice")
            closed = reason
            stream?.stop()
        case .peek:
            if !inbound.isEmpty {
                let bytes = Array(inbound.prefix(readSize))
                bytes.withUnsafeBytes { machine.peeked($0, now: now) }
            } else if clientEndedSending {
                machine.peerFinishedSending()
            } else {
                machine.readWouldBlock()
            }
        case .handshake:
            handshakeBytes.append(inbound)
            inbound.removeAll()
            switch handshakeSteps.isEmpty ? .wantsRead : handshakeSteps.removeFirst() {
            case .wantsRead: machine.handshakeWants(writable: false)
            case .wantsWrite: machine.handshakeWants(writable: true)
            case .finished: machine.handshakeFinished(now: now)
            case .failed: machine.handshakeFailed()
            }
        case .dropTLS:
            droppedTLS = true
        }
    }

    /// The socket takes what it has room for.
    private func accept(_ bytes: [UInt8]) {
        let take = min(bytes.count, socketRoom ?? bytes.count)
        if take == 0 {
            machine.writeWouldBlock()
            return
        }
        written += bytes.prefix(take)
        if let room = socketRoom { socketRoom = room - take }
        machine.wrote(take, now: now)
    }
}

/// A count that handlers on any thread add to.
private final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

/// Routes for the machine: immediate answers, tasks the test completes, a file, a stream, a side effect.
private struct TestRoutes {
    let stream = ManualBodyStream(stallTimeoutMilliseconds: 300, unsentByteLimit: 32 * 1024)
    let counted = Counter()
    let file: FileRegion
    let fileBytes: [UInt8]
    var router = Router()

    init() throws {
        // A file for `sendfile`, unlinked at once: its descriptor keeps it readable.
        let directory = try TemporaryDirectory.make()
        defer { try? TemporaryDirectory.remove(directory) }
        let path = directory + "/body"
        fileBytes = (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        _ = fileBytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        file = FileRegion(
            handle: FileRegion.Handle(descriptor: descriptor), offset: 0, length: fileBytes.count)

        let stream = self.stream
        let counted = self.counted
        let file = self.file
        router.add(.get, "/hello", .immediate { _, _ in HTTPResponse(body: .bytes(Array("hello".utf8))) })
        router.add(.get, "/slow", .task { _, _ in HTTPResponse() })
        router.add(.get, "/file", .immediate { _, _ in HTTPResponse(body: .file(file)) })
        router.add(
            .get, "/shrunk",
            .immediate { _, _ in
                HTTPResponse(
                    body: .file(FileRegion(handle: file.handle, offset: 0, length: file.length + 100)))
            })
        router.add(
            .get, "/stream",
            .immediate { _, _ in HTTPResponse(headers: ["Content-Type": "text/plain"], body: .stream(stream))
            })
        router.add(
            .post, "/count",
            .immediate { _, _ in
                counted.value.add(1, ordering: .relaxed)
                return HTTPResponse(body: .bytes(Array("counted".utf8)))
            })
    }
}

private let date = "Mon, 30 Nov 2026 04:40:00 GMT"

/// The exact response to `GET /hello` with request id `id`.
private func hello(_ id: UInt64, close: Bool = false) -> String {
    "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nDate: \(date)\r\nServer: shutterd\r\nX-Request-Id: \(id)\r\nX-Content-Type-Options: nosniff\r\n"
        + (close ? "Connection: close\r\n" : "") + "\r\nhello"
}

private func response(_ id: UInt64, _ body: String, close: Bool = false) -> String {
    "HTTP/1.1 200 OK\r\nContent-Length: \(body.utf8.count)\r\nDate: \(date)\r\nServer: shutterd\r\nX-Request-Id: \(id)\r\nX-Content-Type-Options: nosniff\r\n"
        + (close ? "Connection: close\r\n" : "") + "\r\n\(body)"
}

private let getHello = "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"
private let getHelloAndClose = "GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
private let getSlow = "GET /slow HTTP/1.1\r\nHost: t\r\n\r\n"
private let getStream = "GET /stream HTTP/1.1\r\nHost: t\r\n\r\n"
private let streamHeadTemplate =
    "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nDate: \(date)\r\nServer: shutterd\r\nX-Request-Id: %\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n"

private func streamHead(_ id: UInt64) -> String { streamHeadTemplate.replacingPercent(with: "\(id)") }

extension String {
    fileprivate func replacingPercent(with text: String) -> String {
        split(separator: "%", omittingEmptySubsequences: false).joined(separator: text)
    }
}

// Serialized: these tests compute on the cooperative pool (one thread per core), and run side by
// side they could hold every thread the socket tests' handler tasks need (seen under TSan).
// A wait that never ends is a failure, not a hung CI run.
@Suite(.serialized, .timeLimit(.minutes(1))) struct HTTPConnectionStateMachineTests {
    // MARK: Requests and responses

    @Test func aRequestFedOneByteAtATimeGetsItsExactResponse() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        for byte in getHello.utf8 {
            #expect(connection.written.isEmpty)
            connection.receive([byte])
        }
        #expect(connection.takeWritten() == hello(1))
        #expect(connection.closed == nil && !connection.halfClosed)
        #expect(connection.interest == [.read, .readHangUp])
    }

    @Test func pipelinedResponsesComeInRequestOrder() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(getSlow + getHello + getSlow + getHelloAndClose)
        #expect(connection.dispatched.map(\.id) == [1, 2, 3, 4])
        #expect(connection.pendingTasks == [1, 3])
        // The later slow request finishes first: nothing may overtake the first.
        connection.complete(3, "slow 3")
        #expect(connection.written.isEmpty)
        connection.complete(1, "slow 1")
        #expect(
            connection.takeWritten()
                == response(1, "slow 1") + hello(2) + response(3, "slow 3") + hello(4, close: true))
        #expect(connection.halfClosed)
    }

    @Test func thousandsPipelinedBehindSlowOnesAreAnsweredWithoutRecursionOrStall() throws {
        // One read takes everything, as the server's 64 KiB buffer does: no later read event
        // will come to restart parsing, so freed room alone must.
        let connection = EmbeddedConnection(router: try TestRoutes().router, readSize: 1 << 20)
        // Sixteen slow requests fill the pipeline; thousands of immediate ones wait in the parser.
        connection.receive(
            String(repeating: getSlow, count: 16) + String(repeating: getHello, count: 5000)
                + getHelloAndClose)
        #expect(connection.dispatched.count == 16)
        for id in (1...16).reversed() { connection.complete(UInt64(id), "slow") }
        let text = connection.takeWritten()
        let expected =
            (1...16).map { response(UInt64($0), "slow") }.joined()
            + (17...5016).map { hello(UInt64($0)) }.joined() + hello(5017, close: true)
        #expect(text == expected)
        #expect(connection.halfClosed)
    }

    @Test func thePipeliningLimitCountsResponsesNotYetWritten() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        // A client that sends and never reads: the socket takes nothing.
        connection.socketRoom = 0
        connection.receive(String(repeating: "GET /file HTTP/1.1\r\nHost: t\r\n\r\n", count: 500))
        // Every immediate response is ready at once, but only sixteen may wait unwritten (each
        // holds its file): the rest are not even dispatched.
        #expect(connection.dispatched.count == 16)
        #expect(connection.interest == [.write])
        connection.drain(room: 0)
        #expect(connection.dispatched.count == 16)
        // Reading drains everything, in order.
        connection.drain()
        #expect(connection.dispatched.count == 500)
        let head =
            "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nDate: \(date)\r\nServer: shutterd\r\nX-Request-Id: "
        let expected = (1...500).map {
            Array((head + "\($0)\r\nX-Content-Type-Options: nosniff\r\n\r\n").utf8) + routes.fileBytes
        }.joined()
        #expect(connection.written == Array(expected))
    }

    @Test func aClientThatNeverReadsIsNotReadFurtherThanOneReadAhead() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router, readSize: 4096)
        // A thousand requests (31 KB) from a client that reads no answer: the socket takes nothing.
        connection.socketRoom = 0
        let requests = String(repeating: "GET /file HTTP/1.1\r\nHost: t\r\n\r\n", count: 1000)
        let sent = requests.utf8.count
        connection.receive(requests)
        // One read, parsed as far as the pipelining limit allows; the rest stays in the socket
        // (the kernel's buffer and TCP's window), not in ours. Four reads a readiness report
        // would take 16 KiB here, and 256 KiB with the server's 64 KiB reads.
        #expect(sent - connection.inbound.count == 4096)
        #expect(connection.dispatched.count == 16)
        #expect(connection.interest == [.write])
        // The socket takes a little at a time: the parser works through what it holds before
        // the next read.
        for _ in 0..<20 { connection.drain(room: 3000) }
        #expect(sent - connection.inbound.count <= 2 * 4096)
        // Reading drains everything, in order.
        connection.drain()
        #expect(connection.inbound.isEmpty)
        #expect(connection.dispatched.count == 1000)
        let head =
            "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nDate: \(date)\r\nServer: shutterd\r\nX-Request-Id: "
        let expected = (1...1000).map {
            Array((head + "\($0)\r\nX-Content-Type-Options: nosniff\r\n\r\n").utf8) + routes.fileBytes
        }.joined()
        #expect(connection.written == Array(expected))
    }

    @Test func aFileBodyFollowsItsHeadWithSendfileAndTheHeadWaitsForIt() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.socketRoom = 400
        connection.receive("GET /file HTTP/1.1\r\nHost: t\r\n\r\n")
        // MSG_MORE on the head: it leaves in one segment with the file's first bytes.
        #expect(connection.sentWithMore == [true])
        #expect(connection.interest == [.read, .readHangUp, .write])
        #expect(connection.sendfileCalls == 1)
        connection.drain()
        #expect(connection.sendfileCalls == 2)
        #expect(connection.written.starts(with: Array("HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n".utf8)))
        #expect(connection.written.suffix(1004) == Array("\r\n\r\n".utf8) + routes.fileBytes)
        #expect(connection.interest == [.read, .readHangUp])
    }

    @Test func aFileThatShrankClosesTheConnection() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive("GET /shrunk HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(connection.closed == .fileShrank)
    }

    @Test func expectContinueGetsTheInterimResponseBeforeTheBody() throws {
        var router = Router()
        router.add(.post, "/echo", .immediate { request, _ in HTTPResponse(body: .bytes(request.body)) })
        let connection = EmbeddedConnection(router: router)
        connection.receive(
            "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        #expect(connection.takeWritten() == "HTTP/1.1 100 Continue\r\n\r\n")
        connection.receive("abcde")
        #expect(connection.takeWritten() == response(1, "abcde"))
    }

    @Test func aMalformedRequestGets400AndALingeringClose() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(getHello + "GET  /hello HTTP/1.1\r\n\r\n" + getHello)
        let text = connection.takeWritten()
        #expect(text.hasPrefix(hello(1) + "HTTP/1.1 400 Bad Request\r\n"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(connection.dispatched.count == 1)
        #expect(connection.halfClosed)
    }

    @Test func unknownPathsAndMethodsAreAnsweredByRouting() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(
            "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\nDELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n")
        let text = connection.takeWritten()
        #expect(text.hasPrefix("HTTP/1.1 404 Not Found\r\n"))
        #expect(text.contains("HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\n"))
        #expect(connection.dispatched.isEmpty)
    }

    @Test func outputTheSocketCannotTakeWaitsForWritable() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.socketRoom = 10
        connection.receive(getHello)
        #expect(connection.written.count == 10)
        #expect(connection.interest == [.read, .readHangUp, .write])
        // Another request while blocked is answered behind the first, without trying the socket.
        connection.receive(getHello)
        #expect(connection.written.count == 10)
        connection.drain()
        #expect(connection.takeWritten() == hello(1) + hello(2))
        #expect(connection.interest == [.read, .readHangUp])
    }

    @Test func accessLogLinesNameEachRequest() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) { $0.logRequests = true }
        connection.receive(getHello + "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n")
        #expect(connection.accessLog.map(\.target) == ["/hello", "/nowhere"])
        #expect(connection.accessLog.map(\.status) == [200, 404])
        #expect(connection.accessLog.map(\.bytes).first == 5)
    }

    @Test func aPolicyAnswersInsteadOfTheHandlerOrLetsItRunWithItsHeadersAndTarget() throws {
        /// Refuses `?deny`, takes `sig` out of the target, adds a header to what it lets through.
        struct TestPolicy: HTTPRequestPolicy {
            func evaluate(_ request: HTTPRequest, path: String, route: RouteMatch) -> HTTPPolicyDecision {
                if request.target.hasSuffix("?deny") {
                    return .respond(HTTPError(.unauthorized, detail: "no").response())
                }
                let target = request.target.hasSuffix("?sig=secret") ? path : nil
                let expiresAt: Int64? = target == nil ? nil : 1_800_000_000
                let seen: String
                switch route {
                case .handler(let scope): seen = "route needs \(scope)"
                case .notFound: seen = "no route"
                case .methodNotAllowed: seen = "other methods"
                }
                return .proceed(headers: ["X-Policy": seen], target: target, expiresAt: expiresAt)
            }
        }
        let connection = EmbeddedConnection(router: try TestRoutes().router, policy: TestPolicy()) {
            $0.logRequests = true
        }
        connection.receive(
            "GET /hello?deny HTTP/1.1\r\nHost: t\r\n\r\nGET /hello?sig=secret HTTP/1.1\r\nHost: t\r\n\r\n"
                + "GET /nowhere HTTP/1.1\r\nHost: t\r\n\r\n")
        let text = connection.takeWritten()
        let responses = text.split(separator: "HTTP/1.1 ")
        #expect(responses.count == 3)
        #expect(responses.first?.hasPrefix("401 Unauthorized") == true)
        #expect(responses.dropFirst().first?.contains("X-Policy: route needs admin") == true)
        #expect(responses.dropFirst().first?.hasSuffix("\r\n\r\nhello") == true)
        #expect(responses.last?.hasPrefix("404 Not Found") == true)
        #expect(responses.last?.contains("X-Policy: no route") == true)
        // The refused request never reached its handler; the rewritten one ran as `/hello`.
        #expect(connection.dispatched.map(\.target) == ["/hello"])
        // The grant's end reaches the handler, for a stream that must stop then.
        #expect(connection.dispatched.map(\.accessExpiresAt) == [1_800_000_000])
        #expect(connection.accessLog.map(\.target) == ["/hello?deny", "/hello", "/nowhere"])
    }

    @Test func aRequestIdFromThisMachineIsKeptAndAnyOtherReplaced() throws {
        let withID = "GET /hello HTTP/1.1\r\nHost: t\r\nX-Request-Id: proxy-7.a_b:c\r\n\r\n"
        let local = EmbeddedConnection(
            router: try TestRoutes().router, peer: PeerAddress(host: "127.0.0.1", isLoopback: true)
        ) { $0.logRequests = true }
        local.receive(withID + "GET /hello HTTP/1.1\r\nHost: t\r\nX-Request-Id: bad id\r\n\r\n")
        let answers = local.takeWritten()
        #expect(answers.contains("X-Request-Id: proxy-7.a_b:c\r\n"))
        // Not a token: ours instead (the second request's id is 2).
        #expect(answers.contains("X-Request-Id: 2\r\n") && !answers.contains("bad id"))
        #expect(local.accessLog.map(\.requestID) == ["proxy-7.a_b:c", "2"])
        let remote = EmbeddedConnection(
            router: try TestRoutes().router, peer: PeerAddress(host: "192.0.2.1", isLoopback: false))
        remote.receive(withID)
        #expect(remote.takeWritten().contains("X-Request-Id: 1\r\n"))
    }

    /// A refused request is answered from its head: its body is never buffered (a megabyte a
    /// connection otherwise, for a client with no credentials), nor asked for with `100 Continue`.
    @Test func aRequestThePolicyRefusesIsAnsweredBeforeItsBody() throws {
        struct RefuseDeny: HTTPRequestPolicy {
            func evaluate(_ request: HTTPRequest, path: String, route: RouteMatch) -> HTTPPolicyDecision {
                request.target.hasSuffix("?deny")
                    ? .respond(HTTPError(.unauthorized, detail: "no").response(), loggedTarget: "/hello?-")
                    : .proceed()
            }
        }
        for expect in ["", "Expect: 100-continue\r\n"] {
            let connection = EmbeddedConnection(router: try TestRoutes().router, policy: RefuseDeny()) {
                $0.logRequests = true
            }
            connection.receive(
                "POST /hello?deny HTTP/1.1\r\nHost: t\r\nContent-Length: 1000000\r\n\(expect)\r\n0123456789")
            let text = connection.takeWritten()
            #expect(text.hasPrefix("HTTP/1.1 401 Unauthorized\r\n"), "\(expect)")
            #expect(text.contains("Connection: close\r\n"))
            #expect(connection.dispatched.isEmpty)
            #expect(connection.accessLog.map(\.target) == ["/hello?-"])
        }
        // One the policy lets through is read whole and asked about again, complete.
        let connection = EmbeddedConnection(router: try TestRoutes().router, policy: RefuseDeny())
        connection.receive("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n\r\nab")
        #expect(connection.takeWritten().isEmpty)
        connection.receive("cd")
        #expect(connection.dispatched.map(\.target) == ["/hello"])
    }

    // MARK: Closing

    @Test func connectionCloseEndsWithALingeringCloseThatDiscardsInput() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(getHelloAndClose)
        #expect(connection.takeWritten() == hello(1, close: true))
        // Half-closed, reading on so unread input does not turn into a reset (RFC 9112 §9.6).
        #expect(connection.halfClosed)
        #expect(connection.interest == [.read, .readHangUp])
        #expect(connection.closed == nil)
        connection.receive(getHello)
        #expect(connection.dispatched.count == 1)
        #expect(connection.written.isEmpty)
        connection.clientEndsSending()
        #expect(connection.closed == .finished)
    }

    @Test func theLingeringCloseEndsAfterTwoSeconds() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(getHelloAndClose)
        connection.advance(milliseconds: 1999)
        #expect(connection.closed == nil)
        connection.advance(milliseconds: 1)
        #expect(connection.closed == .finished)
    }

    @Test func aHalfClosedClientGetsEveryAnswerAndThenTheClose() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(String(repeating: getSlow, count: 40))
        connection.clientEndsSending()
        #expect(connection.closed == nil)
        // Answered a few at a time, as a pipeline of sixteen allows.
        while let id = connection.pendingTasks.first { connection.complete(id, "slow") }
        #expect(connection.takeWritten() == (1...40).map { response(UInt64($0), "slow") }.joined())
        // No lingering: the client has finished sending already.
        #expect(!connection.halfClosed)
        #expect(connection.closed == .finished)
    }

    // MARK: Timeouts

    @Test func anIncompleteRequestGets408AfterTheRequestTimeout() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.requestTimeoutMilliseconds = 10_000
        }
        connection.receive("GET /hello HTT")
        connection.advance(milliseconds: 10_000)
        #expect(connection.written.isEmpty)
        connection.advance(milliseconds: 1)
        let text = connection.takeWritten()
        #expect(text.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(text.contains("within 10000 ms"))
        #expect(connection.halfClosed)
    }

    @Test func theRequestTimeoutCountsFromTheRequestsFirstByte() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.requestTimeoutMilliseconds = 1000
        }
        connection.receive(getHello)
        connection.advance(milliseconds: 5000)
        connection.receive("GET /hel")
        connection.advance(milliseconds: 1000)
        #expect(connection.takeWritten() == hello(1))
        connection.advance(milliseconds: 1)
        #expect(connection.takeWritten().hasPrefix("HTTP/1.1 408 "))
    }

    @Test func aConnectionCountsAsWaitingForARequestOnlyWhileItOwesNothing() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        let accepted = connection.clock.monotonicNow()
        // Silent, then a head arriving a piece at a time: closing it would lose no answer.
        #expect(connection.machine.waitingForRequestSince == accepted)
        connection.advance(milliseconds: 100)
        connection.receive("GET /sl")
        #expect(connection.machine.waitingForRequestSince == accepted)
        // Its handler runs: an answer is owed.
        connection.receive("ow HTTP/1.1\r\nHost: t\r\n\r\n")
        let id = try #require(connection.pendingTasks.first)
        #expect(connection.machine.waitingForRequestSince == nil)
        connection.machine.closeToMakeRoom()
        connection.run()
        #expect(connection.closed == nil)
        // Answered and written: waiting again, since after it connected.
        connection.advance(milliseconds: 100)
        connection.complete(id, "slow")
        #expect(connection.takeWritten().hasSuffix("slow"))
        let waiting = try #require(connection.machine.waitingForRequestSince)
        #expect(waiting > accepted)
        connection.machine.closeToMakeRoom()
        connection.run()
        #expect(connection.closed == .madeRoom)
        #expect(connection.machine.waitingForRequestSince == nil)
    }

    @Test func aStreamIsNeverClosedToMakeRoom() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(getStream)
        #expect(connection.machine.waitingForRequestSince == nil)
        connection.machine.closeToMakeRoom()
        connection.run()
        #expect(connection.closed == nil)
    }

    @Test func aConnectionThatSendsNothingIsClosedSilentlyAfterTheHeaderTimeout() throws {
        // Not the idle timeout: a thousand silent connections would hold every slot for a minute.
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.headerTimeoutMilliseconds = 10_000
            $0.idleTimeoutMilliseconds = 60_000
        }
        connection.advance(milliseconds: 10_000)
        #expect(connection.closed == nil)
        connection.advance(milliseconds: 1)
        #expect(connection.closed == .idle)
        #expect(connection.written.isEmpty)
        #expect(connection.accessLog.isEmpty)
    }

    @Test func aFirstHeadNotCompleteWithinTheHeaderTimeoutOfConnectingGets408() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.headerTimeoutMilliseconds = 2000
            $0.requestTimeoutMilliseconds = 10_000
        }
        connection.advance(milliseconds: 1500)
        connection.receive("GET /hel")
        connection.advance(milliseconds: 500)
        #expect(connection.written.isEmpty)
        connection.advance(milliseconds: 1)
        let text = connection.takeWritten()
        #expect(text.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"))
        #expect(text.contains("within 2000 ms of connecting"))
        #expect(connection.halfClosed)
    }

    @Test func aCompleteHeadStopsTheHeaderTimerAndItsBodyHasTheRequestTimeout() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.headerTimeoutMilliseconds = 1000
            $0.requestTimeoutMilliseconds = 10_000
        }
        connection.receive("GET /hello HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nab")
        connection.advance(milliseconds: 5000)
        #expect(connection.written.isEmpty && connection.closed == nil)
        connection.advance(milliseconds: 5001)
        #expect(connection.takeWritten().contains("not complete within 10000 ms\""))
    }

    @Test func betweenKeptAliveRequestsTheIdleTimeoutApplies() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.headerTimeoutMilliseconds = 1000
            $0.idleTimeoutMilliseconds = 60_000
        }
        connection.receive(getHello)
        #expect(connection.takeWritten() == hello(1))
        connection.advance(milliseconds: 30_000)
        #expect(connection.closed == nil)
        connection.receive(getHello)
        #expect(
            connection.takeWritten().hasSuffix(
                "X-Request-Id: 2\r\nX-Content-Type-Options: nosniff\r\n\r\nhello"))
        connection.advance(milliseconds: 60_001)
        #expect(connection.closed == .idle)
    }

    @Test func anIdleConnectionIsClosedAfterTheIdleTimeout() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.idleTimeoutMilliseconds = 60_000
        }
        connection.receive(getHello)
        connection.advance(milliseconds: 60_000)
        #expect(connection.closed == nil)
        connection.advance(milliseconds: 1)
        #expect(connection.closed == .idle)
    }

    @Test func aConnectionWaitingForItsHandlerIsNotIdle() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.idleTimeoutMilliseconds = 1000
        }
        connection.receive(getSlow)
        connection.advance(milliseconds: 5000)
        #expect(connection.closed == nil)
        connection.complete(1, "slow")
        #expect(
            connection.takeWritten().hasSuffix(
                "X-Request-Id: 1\r\nX-Content-Type-Options: nosniff\r\n\r\nslow"))
    }

    @Test func aClientThatStopsReadingIsDroppedAfterTheWriteTimeout() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router) {
            $0.writeTimeoutMilliseconds = 30_000
        }
        connection.socketRoom = 100
        connection.receive("GET /file HTTP/1.1\r\nHost: t\r\n\r\n")
        connection.advance(milliseconds: 20_000)
        // Progress resets the clock.
        connection.drain(room: 100)
        connection.advance(milliseconds: 30_000)
        #expect(connection.closed == nil)
        connection.advance(milliseconds: 1)
        #expect(connection.closed == .clientStoppedReading)
    }

    // MARK: Streams

    @Test func aStreamGetsItsHeadThenItsChunksAndEndsWithTheClose() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getStream)
        #expect(connection.takeWritten() == streamHead(1))
        #expect(connection.startedStreams == 1)
        // Started before its head is written: when the client has the head, the stream is live.
        let kinds = connection.actionKinds
        #expect(kinds.firstIndex(of: "startStream").map { $0 < kinds.firstIndex(of: "writeBytes")! } == true)
        #expect(connection.unsentByteLimit == 32 * 1024)
        // Reading stops; only the end of the client's sending is still watched.
        #expect(connection.interest == [.readHangUp])
        routes.stream.push(Array("first ".utf8))
        connection.streamWoke()
        routes.stream.push(Array("second".utf8))
        routes.stream.finish()
        connection.streamWoke()
        #expect(connection.takeWritten() == "first second")
        #expect(routes.stream.stops.load(ordering: .relaxed) == 1)
        #expect(connection.halfClosed)
    }

    @Test func aStreamWithNothingToSendWaitsForItsWakeUpInsteadOfSpinning() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getStream)
        #expect(connection.pulls == 1)
        #expect(connection.lastRunActions < 10)
        // Bytes queued without a wake-up are not pulled: the connection is waiting.
        routes.stream.push(Array("frame".utf8))
        connection.advance(milliseconds: 100)
        connection.drain()
        #expect(connection.pulls == 1)
        connection.streamWoke()
        #expect(connection.takeWritten().hasSuffix("frame"))
        #expect(connection.pulls == 3)
    }

    @Test func headOnAStreamGetsTheHeadAndNeverStartsIt() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive("HEAD /stream HTTP/1.1\r\nHost: t\r\n\r\n" + getHello)
        #expect(connection.takeWritten() == streamHead(1))
        #expect(connection.startedStreams == 0)
        #expect(connection.pulls == 0)
        #expect(connection.dispatched.count == 1)
        #expect(connection.halfClosed)
    }

    @Test func requestsPipelinedBehindAStreamAreNotRun() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getStream + "POST /count HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n")
        routes.stream.finish()
        connection.streamWoke()
        #expect(connection.dispatched.map(\.target) == ["/stream"])
        #expect(routes.counted.value.load(ordering: .relaxed) == 0)
        #expect(connection.takeWritten() == streamHead(1))
    }

    @Test func requestsPipelinedBehindAStreamAreNotAnsweredIntoIt() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getHello + getStream + getHello)
        routes.stream.push(Array("frame".utf8))
        routes.stream.finish()
        connection.streamWoke()
        #expect(connection.takeWritten() == hello(1) + streamHead(2) + "frame")
        #expect(connection.halfClosed)
    }

    @Test func aStreamReachedDuringShutdownGetsItsHeadAndTheClose() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getSlow + getStream)
        connection.beginShutdown()
        #expect(connection.closed == nil)
        connection.complete(1, "slow")
        #expect(connection.takeWritten() == response(1, "slow") + streamHead(2))
        #expect(connection.startedStreams == 0)
        #expect(connection.halfClosed)
        connection.clientEndsSending()
        #expect(connection.closed == .finished)
    }

    @Test func aClientThatHalfClosesStillGetsTheStream() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getStream)
        _ = connection.takeWritten()
        connection.clientEndsSending()
        #expect(connection.closed == nil)
        // The end of its sending is known: watching for it again would only spin.
        #expect(connection.interest == [])
        routes.stream.push(Array("frame".utf8))
        connection.streamWoke()
        #expect(connection.takeWritten() == "frame")
        #expect(routes.stream.stops.load(ordering: .relaxed) == 0)
    }

    @Test func aHangUpDuringAStreamEndsIt() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getStream)
        connection.machine.socketReported(.hangUp)
        connection.run()
        #expect(connection.closed == .socketFailed)
        #expect(routes.stream.stops.load(ordering: .relaxed) == 1)
    }

    @Test func aStalledViewerIsDroppedAfterTheStreamsStallTimeout() throws {
        let routes = try TestRoutes()
        // The server's own write timeout is long: the stream's (300 ms) must be the one that applies.
        let connection = EmbeddedConnection(router: routes.router) { $0.writeTimeoutMilliseconds = 60_000 }
        connection.receive(getStream)
        connection.socketRoom = 0
        routes.stream.push([UInt8](repeating: 0x55, count: 1 << 20))
        connection.streamWoke()
        #expect(connection.machine.wantsUnacknowledgedByteCount)
        connection.advance(milliseconds: 300, unacknowledgedBytes: 50_000)
        #expect(connection.closed == nil)
        connection.advance(milliseconds: 1, unacknowledgedBytes: 50_000)
        #expect(connection.closed == .clientStoppedReading)
        #expect(routes.stream.stops.load(ordering: .relaxed) == 1)
    }

    @Test func aViewerDrainingTheSendQueueIsNotStalledWhileTheSocketTakesNothingNew() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getStream)
        connection.socketRoom = 0
        routes.stream.push([UInt8](repeating: 0x55, count: 100 * 1024))
        connection.streamWoke()
        // Three seconds, ten times the stall timeout, with the client's unacknowledged bytes
        // going down at every tick: it reads.
        var unacknowledged = 40_000
        for _ in 0..<12 {
            connection.advance(milliseconds: 250, unacknowledgedBytes: unacknowledged)
            unacknowledged -= 1000
        }
        #expect(connection.closed == nil)
        // Unknown counts (SIOCOUTQ failed) do not count as reading.
        connection.advance(milliseconds: 250, unacknowledgedBytes: nil)
        connection.advance(milliseconds: 100, unacknowledgedBytes: nil)
        #expect(connection.closed == .clientStoppedReading)
    }

    @Test func theStallClockStartsWhenTheStreamHasOutputAgain() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getStream)
        // Long silence from the camera is not a stalled client.
        connection.advance(milliseconds: 10_000)
        #expect(connection.closed == nil)
        connection.socketRoom = 0
        routes.stream.push(Array("frame".utf8))
        connection.streamWoke()
        connection.advance(milliseconds: 300)
        #expect(connection.closed == nil)
        connection.advance(milliseconds: 1)
        #expect(connection.closed == .clientStoppedReading)
    }

    // MARK: Shutdown

    @Test func shutdownClosesAnIdleConnectionAtOnce() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(getHello)
        connection.beginShutdown()
        #expect(connection.closed == .shutdown)
    }

    @Test func shutdownAnswersEveryRequestAlreadyStartedAndOnlyTheLastAnnouncesTheClose() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(String(repeating: getSlow, count: 4))
        connection.beginShutdown()
        for id in 1...4 { connection.complete(UInt64(id), "slow") }
        #expect(
            connection.takeWritten()
                == (1...3).map { response(UInt64($0), "slow") }.joined() + response(4, "slow", close: true))
        #expect(connection.halfClosed)
    }

    @Test func shutdownEndsALiveStreamAtOnce() throws {
        let routes = try TestRoutes()
        let connection = EmbeddedConnection(router: routes.router)
        connection.receive(getStream)
        // A frame still owed to a slow viewer: a stream has no end to wait for, even so.
        connection.socketRoom = 0
        routes.stream.push(Array("frame".utf8))
        connection.streamWoke()
        connection.beginShutdown()
        #expect(connection.closed == .shutdown)
        #expect(routes.stream.stops.load(ordering: .relaxed) == 1)
    }

    @Test func theEndOfTheShutdownGraceClosesWhatIsStillOwed() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router)
        connection.receive(getSlow)
        connection.beginShutdown()
        #expect(connection.closed == nil)
        connection.machine.shutdownGraceEnded()
        connection.run()
        #expect(connection.closed == .shutdown)
        // A late answer is dropped.
        connection.complete(1, "slow")
        #expect(connection.written.isEmpty)
    }

    // MARK: TLS

    /// The first bytes of a ClientHello record: handshake (22), version 3.1, length.
    private static let clientHello: [UInt8] = [0x16, 0x03, 0x01, 0x02, 0x00, 0x01]

    @Test func onlyAHandshakeRecordStartsTLS() {
        #expect(Machine.startsTLSHandshake(0x16))
        for byte in Array("GET POST HEAD PUT DELETE OPTIONS PRI".utf8) + [0x80, 0x00, 0x15, 0x17] {
            #expect(!Machine.startsTLSHandshake(byte))
        }
    }

    @Test func aClientHelloStartsTheHandshakeAndItsStepsWaitAsTheyWish() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true)
        #expect(connection.machine.tlsPhase == .sniffing)
        connection.handshakeSteps = [.wantsWrite]
        connection.receive(Self.clientHello)
        // The peek left the ClientHello for the handshake, which took it.
        #expect(connection.handshakeBytes.first == Self.clientHello)
        #expect(connection.machine.tlsPhase == .handshaking)
        #expect(connection.actionKinds.prefix(2) == ["peek", "handshake"])
        // The step wanted to write: the socket is watched for writing, and when it is writable
        // the next step runs (it then waits for the client's next flight).
        #expect(connection.handshakeBytes == [Self.clientHello, []])
        #expect(connection.interest == [.read, .readHangUp])
        connection.handshakeSteps = [.finished]
        connection.receive([0x14, 0x03, 0x03])
        #expect(connection.machine.tlsPhase == .established)
        #expect(connection.written.isEmpty && connection.closed == nil)
        // Requests flow as on a plain connection (the transport decrypts them).
        connection.receive(getHello)
        #expect(connection.takeWritten() == hello(1))
        #expect(!connection.droppedTLS)
    }

    @Test func aHandshakeThatWantsToWriteWatchesForWritable() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true)
        connection.socketRoom = 0
        connection.handshakeSteps = [.wantsWrite]
        connection.receive(Self.clientHello)
        #expect(connection.interest == [.write])
        connection.handshakeSteps = [.finished]
        connection.drain()
        #expect(connection.machine.tlsPhase == .established)
        #expect(connection.interest == [.read, .readHangUp])
    }

    @Test func plainHTTPOnTheTLSPortGetsA400InPlainTextAndTheClose() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true)
        connection.receive(getHello)
        #expect(connection.droppedTLS)
        #expect(connection.handshakeBytes.isEmpty)
        #expect(connection.machine.tlsPhase == nil)
        let text = connection.takeWritten()
        #expect(text.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(text.contains("use an https:// URL"))
        // The plain request was never dispatched, and is drained by the lingering close.
        #expect(connection.dispatched.isEmpty)
        #expect(connection.halfClosed)
        #expect(connection.inbound.isEmpty)
        // The driver switched before writing: nothing was written through TLS.
        let drop = connection.actionKinds.firstIndex(of: "dropTLS")
        let write = connection.actionKinds.firstIndex(of: "writeBytes")
        #expect(drop != nil && write != nil && drop! < write!)
    }

    @Test func aSilentClientIsClosedAfterTheRequestTimeout() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true) {
            $0.requestTimeoutMilliseconds = 2000
            $0.idleTimeoutMilliseconds = 60_000
        }
        connection.run()
        connection.advance(milliseconds: 2000)
        #expect(connection.closed == nil)
        connection.advance(milliseconds: 1)
        #expect(connection.closed == .handshakeTimedOut)
        #expect(connection.written.isEmpty)
    }

    @Test func aHandshakeThatStallsIsClosedAfterTheRequestTimeoutFromTheAccept() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true) {
            $0.requestTimeoutMilliseconds = 2000
        }
        connection.advance(milliseconds: 1500)
        connection.receive(Self.clientHello)
        #expect(connection.machine.tlsPhase == .handshaking)
        connection.advance(milliseconds: 500)
        #expect(connection.closed == nil)
        connection.advance(milliseconds: 1)
        #expect(connection.closed == .handshakeTimedOut)
    }

    @Test func theRequestTimeoutAfterTheHandshakeCountsFromTheRequestsFirstByte() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true) {
            $0.requestTimeoutMilliseconds = 2000
        }
        connection.handshakeSteps = [.finished]
        connection.receive(Self.clientHello)
        connection.advance(milliseconds: 5000)
        #expect(connection.closed == nil)
        connection.receive("GET /hel")
        connection.advance(milliseconds: 2001)
        #expect(connection.takeWritten().hasPrefix("HTTP/1.1 408 "))
    }

    @Test func aFailedHandshakeClosesWithoutAWord() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true)
        connection.handshakeSteps = [.failed]
        connection.receive(Self.clientHello)
        #expect(connection.closed == .handshakeFailed)
        #expect(connection.written.isEmpty)
    }

    @Test func aClientThatClosesBeforeAClientHelloIsClosed() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true)
        connection.clientEndsSending()
        #expect(connection.closed == .finished)
        #expect(connection.written.isEmpty)
    }

    @Test func shutdownDuringTheHandshakeClosesAtOnce() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, tls: true)
        connection.receive(Self.clientHello)
        connection.beginShutdown()
        #expect(connection.closed == .shutdown)
    }

    @Test func bytesTheTransportHoldsAreReadWithoutAReadinessEvent() throws {
        let connection = EmbeddedConnection(router: try TestRoutes().router, readSize: 16, tls: true)
        connection.handshakeSteps = [.finished]
        connection.receive(Self.clientHello)
        // Eight requests decrypted at once, more than the reads one readiness report allows:
        // the socket will not say readable again, so reading goes on while the transport holds bytes.
        connection.transportHolds = true
        connection.inbound = Array(String(repeating: getHello, count: 8).utf8)
        connection.machine.socketReported(.readable)
        connection.run()
        #expect(connection.inbound.isEmpty)
        #expect(connection.takeWritten() == (1...8).map { hello(UInt64($0)) }.joined())
    }
}
