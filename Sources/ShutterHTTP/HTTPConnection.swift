import CShutterLinux
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// One client connection's driver: carries out what its `HTTPConnectionStateMachine` decides
/// (the syscalls, running handlers, calling the body stream) and reports back what happened.
///
/// Every event (readiness, a handler finishing, a stream waking, a tick) is reported to the
/// machine and then `pump()` asks it for actions until it has none. An event that arrives
/// while the pump runs (an immediate handler's answer, a stream waking inside `start`) only
/// updates the machine; the running pump picks it up, so the stack never grows.
///
/// Bytes go through a `ConnectionTransport`: plain TCP, or TLS (`TLSTransport`), whose handshake
/// the machine steps through before the first request.
final class HTTPConnection: EventLoopHandler, @unchecked Sendable {
    // @unchecked Sendable: all state is owned by the server's loop thread. A handler
    // task carries the connection only to hand its response back via `loop.execute`.
    let descriptor: Int32
    /// Where the client connected from (nil for a family other than IP).
    var peer: PeerAddress? { machine.peer }
    private unowned let server: HTTPServer
    private var machine: HTTPConnectionStateMachine
    private var pumping = false
    /// Where bytes go: the TLS transport until a plain-HTTP client makes it drop TLS.
    private var transport: any ConnectionTransport
    /// The TLS transport while the connection speaks TLS (for the handshake).
    private var tls: TLSTransport?
    /// Why the handshake failed, for the log line when the connection closes.
    private var handshakeError: TLSError?

    /// A connection on `descriptor`, speaking TLS through `tls` when given.
    init(descriptor: Int32, peer: PeerAddress?, server: HTTPServer, tls: TLSTransport? = nil) {
        self.descriptor = descriptor
        self.server = server
        self.tls = tls
        transport = tls ?? PlainTransport(descriptor: descriptor)
        machine = HTTPConnectionStateMachine(
            configuration: server.configuration, router: server.router, policy: server.policy,
            dateCache: server.dateCache,
            requestIDs: server.requestIDs, readBufferSize: server.readBuffer.count,
            now: server.clock.monotonicNow(), peer: peer, tls: tls != nil)
    }

    func handleEvents(_ events: UInt32) {
        var reported: HTTPConnectionStateMachine.SocketEvents = []
        if events & cshutter_epollin() != 0 { reported.insert(.readable) }
        if events & cshutter_epollout() != 0 { reported.insert(.writable) }
        if events & cshutter_epollrdhup() != 0 { reported.insert(.peerClosedSending) }
        if events & (cshutter_epollhup() | cshutter_epollerr()) != 0 { reported.insert(.hangUp) }
        machine.socketReported(reported)
        pump()
    }

    /// Hands a finished response to the machine (on the loop thread).
    private func complete(_ id: UInt64, _ response: HTTPResponse) {
        machine.handlerFinished(id: id, response: response)
        pump()
    }

    /// Called by the stream's writer: it has output again.
    func streamHasOutput() {
        machine.streamWoke(now: server.clock.monotonicNow())
        pump()
    }

    /// Stops taking requests; closes now if idle, else after answering every request already started.
    func beginShutdown() {
        machine.beginShutdown()
        pump()
    }

    /// Since when the connection has waited for a request owing nothing (nil: it owes something).
    var waitingForRequestSince: MonotonicInstant? { machine.waitingForRequestSince }

    /// Closes the connection, waiting for a request and owing nothing, so that another client's
    /// can be taken; `connectionClosed` has run when this returns.
    func closeToMakeRoom() {
        machine.closeToMakeRoom()
        pump()
    }

    /// Closes at once, whatever is still owed (the shutdown's grace ended).
    func closeNow() {
        machine.shutdownGraceEnded()
        pump()
    }

    /// Enforces the request, idle, write and stall timeouts (called on every loop tick).
    func checkDeadlines(now: MonotonicInstant) {
        var unacknowledged: Int?
        if machine.wantsUnacknowledgedByteCount {
            // Unknown on failure: the stall is then judged by write progress alone.
            do {
                unacknowledged = Int(
                    try syscall("ioctl(SIOCOUTQ)") { cshutter_socket_unacknowledged_bytes(descriptor) })
            } catch {
                unacknowledged = nil
            }
        }
        machine.tick(now: now, unacknowledgedBytes: unacknowledged)
        pump(now: now)
    }

    // MARK: The pump

    private func pump(now: MonotonicInstant? = nil) {
        if pumping { return }
        pumping = true
        defer { pumping = false }
        let now = now ?? server.clock.monotonicNow()
        while let action = machine.nextAction(now: now) {
            perform(action, now: now)
        }
    }

    private func perform(_ action: HTTPConnectionStateMachine.Action, now: MonotonicInstant) {
        switch action {
        case .read:
            read(now: now)
        case .writeBytes(let batch):
            writeBytes(batch, now: now)
        case .sendFile(let region, let offset, let count):
            report(
                write: Result {
                    try transport.sendFile(region.handle.descriptor, offset: offset, count: count)
                },
                now: now)
        case .dispatch(let id, let request, let handler, let parameters):
            dispatch(id, request, handler, parameters)
        case .startStream(let stream, let unsentByteLimit):
            if let unsentByteLimit { setUnsentByteLimit(unsentByteLimit) }
            stream.start(HTTPStreamWriter(loop: server.loop, connection: self))
        case .pullStream(let stream):
            let output = stream.nextOutput()
            machine.streamProduced(output)
        case .stopStream(let stream):
            stream.stop()
        case .logAccess(let entry):
            logAccess(entry)
        case .halfClose:
            do {
                try transport.shutdownSending()
            } catch {
                // ENOTCONN: the client reset the connection already; nothing is left to linger for.
                machine.socketFailed()
            }
        case .setInterest(let interest):
            var events: UInt32 = 0
            if interest.contains(.read) { events |= cshutter_epollin() }
            if interest.contains(.write) { events |= cshutter_epollout() }
            if interest.contains(.readHangUp) { events |= cshutter_epollrdhup() }
            do {
                try server.loop.modify(descriptor, events: events)
                server.socketCallSucceeded(.connectionInterest)
            } catch let error as SystemError {
                // ENOMEM/ENOSPC: a connection whose events cannot be changed would hang or spin.
                server.socketCallFailed(
                    .connectionInterest, error, "closing a connection whose epoll events cannot be changed")
                machine.socketFailed()
            } catch {
                machine.socketFailed()
            }
        case .close(let reason, let stream):
            close(reason, stoppingStream: stream)
        case .peek:
            peek(now: now)
        case .handshake:
            handshake(now: now)
        case .dropTLS:
            tls = nil
            transport = PlainTransport(descriptor: descriptor)
        }
    }

    // MARK: TLS

    /// Peeks at the first bytes, leaving them for the handshake or the plain request.
    private func peek(now: MonotonicInstant) {
        let buffer = server.readBuffer
        do {
            let result = try nonBlockingSyscall("recv(MSG_PEEK)") {
                recv(descriptor, buffer.baseAddress, 8, Int32(MSG_PEEK))
            }
            switch result {
            case .processed(0): machine.peerFinishedSending()
            case .processed(let count):
                machine.peeked(UnsafeRawBufferPointer(rebasing: buffer[0..<count]), now: now)
            case .wouldBlock: machine.readWouldBlock()
            }
        } catch {
            machine.socketFailed()
        }
    }

    private func handshake(now: MonotonicInstant) {
        guard let tls else { return }
        switch tls.handshake() {
        case .finished:
            server.tlsEstablished(tls)
            machine.handshakeFinished(now: now)
        case .wantsRead: machine.handshakeWants(writable: false)
        case .wantsWrite: machine.handshakeWants(writable: true)
        case .failed(let error):
            handshakeError = error
            machine.handshakeFailed()
        }
    }

    // MARK: Reading and writing

    private func read(now: MonotonicInstant) {
        let buffer = server.readBuffer
        do {
            let result = try transport.read(into: buffer)
            switch result {
            case .processed(0): machine.peerFinishedSending()
            case .processed(let count):
                machine.bytesRead(
                    UnsafeRawBufferPointer(rebasing: buffer[0..<count]), now: now,
                    moreBuffered: transport.hasBufferedInput)
            case .wouldBlock: machine.readWouldBlock()
            }
        } catch {
            // ECONNRESET and the like: the client is gone.
            machine.socketFailed()
        }
    }

    /// Writes the batch's chunks with one transport write (`sendmsg` for plain TCP), straight
    /// from the arrays that hold them.
    private func writeBytes(_ batch: HTTPConnectionStateMachine.WriteBatch, now: MonotonicInstant) {
        let vectors = server.ioVectors
        // Each chunk's pointer is valid only inside its `withUnsafeBytes`, so the vectors are
        // filled by nested calls and sent from the innermost (at most `maxChunksPerWrite` deep).
        func fill(_ index: Int, _ filled: Int) throws -> IOResult<Int> {
            var index = index
            while index < batch.range.upperBound {
                guard let chunk = machine.chunk(at: index) else {
                    index += 1
                    continue
                }
                return try chunk.bytes.withUnsafeBytes { raw in
                    vectors[filled] = iovec(
                        iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + chunk.offset),
                        iov_len: raw.count - chunk.offset)
                    return try fill(index + 1, filled + 1)
                }
            }
            return try transport.write(vectors, count: filled, moreFollows: batch.fileFollows)
        }
        report(write: Result { try fill(batch.range.lowerBound, 0) }, now: now)
    }

    private func report(write result: Result<IOResult<Int>, any Error>, now: MonotonicInstant) {
        switch result {
        case .success(.processed(let count)): machine.wrote(count, now: now)
        case .success(.wouldBlock): machine.writeWouldBlock()
        // EPIPE, ECONNRESET: the client is gone.
        case .failure: machine.socketFailed()
        }
    }

    /// Caps the bytes the kernel holds unsent for a stream (`TCP_NOTSENT_LOWAT`, tcp(7)).
    private func setUnsentByteLimit(_ limit: Int) {
        var value = Int32(clamping: limit)
        do {
            _ = try syscall("setsockopt(TCP_NOTSENT_LOWAT)") {
                setsockopt(
                    descriptor, Int32(IPPROTO_TCP), TCP_NOTSENT_LOWAT, &value,
                    socklen_t(MemoryLayout<Int32>.size))
            }
            server.socketCallSucceeded(.unsentByteLimit)
        } catch let error as SystemError {
            // The stream still works, but a slow viewer gets frames that waited in a large
            // send buffer instead of the newest: worth a warning, not the viewer.
            server.socketCallFailed(.unsentByteLimit, error, "streaming without a cap on unsent bytes")
        } catch {}
    }

    // MARK: Handlers

    private func dispatch(
        _ id: UInt64, _ request: HTTPRequest, _ handler: RouteHandler, _ parameters: RouteParameters
    ) {
        // Every line logged on the request's behalf carries its id (Logger.requestID).
        switch handler {
        case .immediate(let handler):
            let response = Logger.$requestID.withValue(request.id) {
                Self.respond(server.logger) { try handler(request, parameters) }
            }
            complete(id, response)
        case .task(let handler):
            startTask(id, requestID: request.id) { try await handler(request, parameters) }
        case .immediateOrTask(let immediate, let task):
            if let answer = answerOnTheLoop(immediate, request, parameters) {
                complete(id, answer)
            } else {
                startTask(id, requestID: request.id) { try await task(request, parameters) }
            }
        case .immediateOrDeferred(let immediate, let deferred):
            if let answer = answerOnTheLoop(immediate, request, parameters) {
                complete(id, answer)
                return
            }
            let loop = server.loop
            let logger = server.logger
            let requestID = request.id
            let responder = HTTPResponder(
                deliver: { response in loop.execute { self.complete(id, response) } },
                mapError: { error in
                    Logger.$requestID.withValue(requestID) { Self.errorResponse(error, logger) }
                })
            Logger.$requestID.withValue(request.id) {
                do {
                    try deferred(request, parameters, responder)
                } catch {
                    responder.fail(error)
                }
            }
        }
    }

    /// The answer of an `immediate` handler that may decline (nil), a throw mapped to its answer.
    private func answerOnTheLoop(
        _ immediate: (HTTPRequest, RouteParameters) throws -> HTTPResponse?, _ request: HTTPRequest,
        _ parameters: RouteParameters
    ) -> HTTPResponse? {
        Logger.$requestID.withValue(request.id) {
            do {
                return try immediate(request, parameters)
            } catch {
                return Self.errorResponse(error, server.logger)
            }
        }
    }

    /// Runs `handler` as a Swift task and completes request `id` with its response on the loop.
    private func startTask(
        _ id: UInt64, requestID: String, _ handler: @escaping @Sendable () async throws -> HTTPResponse
    ) {
        let logger = server.logger
        let loop = server.loop
        Task {
            let response = await Logger.$requestID.withValue(requestID) {
                await Self.respondAsync(logger) { try await handler() }
            }
            loop.execute { self.complete(id, response) }
        }
    }

    private static func respond(_ logger: Logger, _ body: () throws -> HTTPResponse) -> HTTPResponse {
        do { return try body() } catch { return errorResponse(error, logger) }
    }

    private static func respondAsync(_ logger: Logger, _ body: () async throws -> HTTPResponse) async
        -> HTTPResponse
    {
        do { return try await body() } catch { return errorResponse(error, logger) }
    }

    static func errorResponse(_ error: any Error, _ logger: Logger) -> HTTPResponse {
        if let error = error as? any HTTPResponseError {
            // A 500 that an error maps itself to tells the client only to see the log: say it here.
            if error.status == .internalServerError {
                logger.error("request failed", ["error": String(describing: error)])
            }
            return error.response()
        }
        // Anything else is a bug or an OS failure: log it, and leak nothing to the client.
        logger.error("handler failed", ["error": String(describing: error)])
        return HTTPError(
            .internalServerError, detail: "the server failed to handle this request; see its log"
        )
        .response()
    }

    // MARK: Lifecycle

    private func close(
        _ reason: HTTPConnectionStateMachine.CloseReason, stoppingStream stream: (any HTTPBodyStream)?
    ) {
        server.loop.deregister(descriptor)
        closeDescriptor(descriptor)
        stream?.stop()
        switch reason {
        case .clientStoppedReading:
            server.logger.info("closing connection: client stopped reading", ["fd": String(descriptor)])
        case .fileShrank:
            server.logger.warning(
                "closing connection: a file shrank while it was sent", ["fd": String(descriptor)])
        case .handshakeFailed:
            server.logger.info(
                "closing connection: TLS handshake failed",
                ["fd": String(descriptor), "error": handshakeError?.description ?? "unknown"])
        case .handshakeTimedOut:
            server.logger.info(
                "closing connection: TLS handshake not finished within the request timeout",
                ["fd": String(descriptor)])
        case .finished, .socketFailed, .idle, .shutdown, .madeRoom:
            break
        }
        server.connectionClosed(self)
    }

    private func logAccess(_ entry: HTTPConnectionStateMachine.AccessLogEntry) {
        if server.configuration.logRequests {
            server.accessLog.record(
                requestID: entry.requestID, method: entry.method, target: entry.target, status: entry.status,
                bytes: entry.bytes, startedAt: entry.startedAt)
        }
        if server.configuration.collectMetrics {
            server.metrics.record(
                method: entry.method, route: entry.route, status: entry.status,
                nanoseconds: server.clock.monotonicNow().nanoseconds(since: entry.startedAt))
        }
    }
}
