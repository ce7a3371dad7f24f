import CShutterLinux
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// One client connection: parses requests, runs handlers, and writes responses in
/// request order (pipelining, RFC 9112 §9.3.2), as the socket drains.
///
/// All work happens in `pump()`, which parses as far as there is room, queues the
/// responses that are next in order, and writes what the socket takes, until none of
/// the three makes progress. Every event (readable, writable, a handler finishing)
/// just calls `pump()`; a re-entrancy guard turns nested calls into another round of
/// the outer loop, so the stack never grows with the number of pipelined requests.
final class HTTPConnection: EventLoopHandler, @unchecked Sendable {
    // @unchecked Sendable: all state is owned by the server's loop thread. A handler
    // task carries the connection only to hand its response back via `loop.execute`.
    let descriptor: Int32
    private unowned let server: HTTPServer
    private var parser: HTTPRequestParser

    /// A request waiting for, or holding, its response; answered strictly in order.
    private struct Slot {
        let id: UInt64
        let method: HTTPMethod
        let target: String
        let version: HTTPVersion
        let keepAlive: Bool
        let startedAt: MonotonicInstant
        /// `100 Continue` is not logged and never closes.
        let interim: Bool
        var response: HTTPResponse?
    }

    /// Bytes queued for the socket: memory goes out with `sendmsg`, files with `sendfile`.
    private enum Outgoing {
        case bytes([UInt8], offset: Int)
        case file(FileRegion, sent: Int)
        /// Marks where a response ends, so responses still unwritten can be counted.
        case endOfResponse
    }

    private var slots: [Slot] = []
    private var outgoing: [Outgoing] = []
    private var outgoingIndex = 0
    /// Responses queued in `outgoing` and not completely written: they count against the
    /// pipelining limit, so a client that sends and never reads cannot make us queue
    /// responses (and their open files) without bound.
    private var unsentResponses = 0

    /// No more requests are parsed: a parse error, `Connection: close`, or shutdown.
    private var stopParsing = false
    private var peerClosed = false
    private var lingerDeadline: MonotonicInstant?
    private var closed = false
    private var pumping = false
    private var pumpAgain = false
    /// The epoll events asked for now (the server registers new connections for reading).
    private var watchedEvents = cshutter_epollin() | cshutter_epollrdhup()

    /// The body stream being written, once its head is queued; it owns the rest of the connection.
    private var stream: (any HTTPBodyStream)?
    /// Set when the stream had nothing to write; its `wake()` pumps again.
    private var streamWaiting = false
    /// The send queue's unacknowledged bytes at the last tick (streams only; see `noteClientReading`).
    private var lastUnacknowledgedBytes: Int?

    private var requestStartedAt: MonotonicInstant?
    private var lastActivity: MonotonicInstant
    private var lastWriteProgress: MonotonicInstant

    init(descriptor: Int32, server: HTTPServer) {
        self.descriptor = descriptor
        self.server = server
        self.parser = HTTPRequestParser(limits: server.configuration.limits)
        let now = server.clock.monotonicNow()
        lastActivity = now
        lastWriteProgress = now
    }

    func handleEvents(_ events: UInt32) {
        if stream != nil {
            // A stream reads no more requests. A reset (a client that closed and was then sent
            // more) ends it at once; the end of the client's sending (EPOLLRDHUP) may be a
            // half-close by a client that still reads (`nc -N`, socat), so the stream goes on
            // and a client that closed entirely is noticed on the next write.
            if events & (cshutter_epollhup() | cshutter_epollerr()) != 0 {
                close()
                return
            }
            if events & cshutter_epollrdhup() != 0 { peerClosed = true }
            pump()
            return
        }
        let readable = cshutter_epollin() | cshutter_epollhup() | cshutter_epollrdhup() | cshutter_epollerr()
        if events & readable != 0 {
            readAvailable()
            if closed { return }
        }
        pump()
    }

    // MARK: The pump

    private var capacity: Int {
        server.configuration.maxPipelinedRequests - slots.count - unsentResponses
    }

    private func pump() {
        if pumping {
            pumpAgain = true
            return
        }
        pumping = true
        repeat {
            pumpAgain = false
            parseRequests()
            queueReadyResponses()
            writeOutgoing()
        } while pumpAgain && !closed
        pumping = false
        if !closed && !finishIfDone() { updateInterest() }
    }

    // MARK: Reading

    private func readAvailable() {
        let buffer = server.readBuffer
        // A few reads per wake-up, then give other connections their turn.
        for _ in 0..<4 {
            let result: IOResult<Int>
            do {
                result = try nonBlockingSyscall("read") {
                    Glibc.read(descriptor, buffer.baseAddress, buffer.count)
                }
            } catch {
                close()
                return
            }
            guard case .processed(let count) = result else { break }
            if count == 0 {
                peerClosed = true
                break
            }
            lastActivity = server.clock.monotonicNow()
            if lingerDeadline != nil { continue }  // discarding what the client still sends
            parser.append(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            if count < buffer.count { break }
        }
        if lingerDeadline != nil && peerClosed { close() }
    }

    /// Turns buffered bytes into dispatched requests while there is room for their responses.
    private func parseRequests() {
        while !closed && !stopParsing && lingerDeadline == nil && capacity > 0 {
            switch parser.next() {
            case .needMoreData:
                if parser.bufferedByteCount > 0 {
                    if requestStartedAt == nil { requestStartedAt = server.clock.monotonicNow() }
                } else {
                    requestStartedAt = nil
                }
                return
            case .sendContinue:
                slots.append(
                    Slot(
                        id: 0, method: .get, target: "", version: .http11, keepAlive: true,
                        startedAt: server.clock.monotonicNow(), interim: true,
                        response: HTTPResponse(status: .continue)))
            case .request(let request):
                let startedAt = requestStartedAt ?? server.clock.monotonicNow()
                requestStartedAt = nil
                dispatch(request, startedAt: startedAt)
            case .error(let error):
                queueError(HTTPError(error.status, detail: error.detail), startedAt: requestStartedAt)
            }
        }
    }

    /// Answers with `error` and closes after it (the request stream can no longer be trusted).
    private func queueError(_ error: HTTPError, startedAt: MonotonicInstant?) {
        stopParsing = true
        requestStartedAt = nil
        slots.append(
            Slot(
                id: server.makeRequestID(), method: .get, target: "-", version: .http11, keepAlive: false,
                startedAt: startedAt ?? server.clock.monotonicNow(), interim: false,
                response: error.response()))
    }

    private func dispatch(_ request: HTTPRequest, startedAt: MonotonicInstant) {
        let id = server.makeRequestID()
        let keepAlive = request.keepAlive && !server.isShuttingDown
        slots.append(
            Slot(
                id: id, method: request.method, target: request.target, version: request.version,
                keepAlive: keepAlive, startedAt: startedAt, interim: false, response: nil))
        if !keepAlive { stopParsing = true }

        guard let path = request.path else {
            complete(
                id,
                HTTPError(.badRequest, detail: "the request path has an invalid percent-encoding").response())
            return
        }
        switch server.router.resolve(method: request.method, path: path) {
        case .notFound:
            complete(id, HTTPError(.notFound, detail: "no resource at \(path)").response())
        case .methodNotAllowed(let allowed):
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            complete(
                id,
                HTTPError(
                    .methodNotAllowed, detail: "\(request.method) is not allowed on \(path); use \(allow)",
                    headers: ["Allow": allow]
                ).response())
        case .handler(.immediate(let handler), let parameters):
            completeImmediately(id, Self.respond(server.logger) { try handler(request, parameters) })
        case .handler(.task(let handler), let parameters):
            startTask(id) { try await handler(request, parameters) }
        case .handler(.immediateOrTask(let immediate, let task), let parameters):
            let answer: HTTPResponse?
            do {
                answer = try immediate(request, parameters)
            } catch {
                answer = Self.errorResponse(error, server.logger)
            }
            if let answer {
                completeImmediately(id, answer)
            } else {
                startTask(id) { try await task(request, parameters) }
            }
        }
    }

    /// Completes request `id` with the answer of a handler that ran on the loop. A stream keeps the
    /// connection to the end, so nothing pipelined behind it may run: parsing stops here, before
    /// the next request is dispatched. (A stream returned by a task would come after requests
    /// parsed meanwhile had run; return streams from `.immediate` handlers.)
    private func completeImmediately(_ id: UInt64, _ response: HTTPResponse) {
        if response.body.isStream { stopParsing = true }
        complete(id, response)
    }

    /// Runs `handler` as a Swift task and completes request `id` with its response on the loop.
    private func startTask(_ id: UInt64, _ handler: @escaping @Sendable () async throws -> HTTPResponse) {
        let logger = server.logger
        let loop = server.loop
        Task {
            let response = await Self.respondAsync(logger) { try await handler() }
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

    private static func errorResponse(_ error: any Error, _ logger: Logger) -> HTTPResponse {
        if let error = error as? any HTTPResponseError { return error.response() }
        // Anything else is a bug or an OS failure: log it, and leak nothing to the client.
        logger.error("handler failed", ["error": String(describing: error)])
        return HTTPError(
            .internalServerError, detail: "the server failed to handle this request; see its log"
        )
        .response()
    }

    /// Hands a finished response to its slot (on the loop thread).
    private func complete(_ id: UInt64, _ response: HTTPResponse) {
        guard !closed, let index = slots.firstIndex(where: { $0.id == id && !$0.interim }) else { return }
        slots[index].response = response
        pump()
    }

    // MARK: Writing

    /// Serializes every response that is next in order and ready.
    private func queueReadyResponses() {
        while let first = slots.first, let response = first.response {
            slots.removeFirst()
            if first.interim {
                outgoing.append(.bytes(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8), offset: 0))
                continue
            }
            // The last response before a close says so; earlier ones, already promised, keep the connection.
            // A stream has no end but the close, so it is always the last.
            let isLast = slots.isEmpty && (stopParsing || server.isShuttingDown)
            let keepAlive = first.keepAlive && !isLast && !response.body.isStream
            let head = HTTPResponseHead.serialize(
                response, version: first.version, keepAlive: keepAlive, date: server.dateCache.current(),
                server: server.configuration.serverName, requestID: first.id)
            outgoing.append(.bytes(head, offset: 0))
            let code = response.status.code
            if first.method != .head && code >= 200 && code != 204 && code != 304 {
                switch response.body {
                case .empty: break
                case .bytes(let bytes): if !bytes.isEmpty { outgoing.append(.bytes(bytes, offset: 0)) }
                case .file(let region): if region.length > 0 { outgoing.append(.file(region, sent: 0)) }
                case .stream(let body):
                    // The stream's output is pulled once everything before it is written, and its
                    // end of response is queued when it finishes. Requests pipelined behind it
                    // can never be answered: the connection closes when the stream ends.
                    logAccess(first, response)
                    unsentResponses += 1
                    stopParsing = true
                    slots.removeAll()
                    if server.isShuttingDown {
                        // Reached only after shutdown began (it waited behind a slower answer):
                        // the head, then the close, instead of a stream that would hold the shutdown.
                        outgoing.append(.endOfResponse)
                        return
                    }
                    stream = body
                    if var limit = body.unsentByteLimit.map(Int32.init(clamping:)) {
                        setsockopt(
                            descriptor, Int32(IPPROTO_TCP), TCP_NOTSENT_LOWAT, &limit,
                            socklen_t(MemoryLayout<Int32>.size))
                    }
                    body.start(HTTPStreamWriter(loop: server.loop, connection: self))
                    return
                }
            }
            outgoing.append(.endOfResponse)
            unsentResponses += 1
            logAccess(first, response)
            if !keepAlive { stopParsing = true }
        }
    }

    /// Called by the stream's writer: it has output again.
    func streamHasOutput() {
        guard streamWaiting, !closed else { return }
        streamWaiting = false
        // The stall clock starts when there is something to send again, not at the last write
        // before the wait.
        lastWriteProgress = server.clock.monotonicNow()
        pump()
    }

    /// Queues the stream's next output; returns false when it has none now.
    private func pullFromStream() -> Bool {
        guard let body = stream, !streamWaiting else { return false }
        switch body.nextOutput() {
        case .chunks(let chunks):
            let queuedBefore = outgoing.count
            for chunk in chunks where !chunk.isEmpty { outgoing.append(.bytes(chunk, offset: 0)) }
            if outgoing.count == queuedBefore {
                streamWaiting = true
                return false
            }
            return true
        case .waiting:
            streamWaiting = true
            return false
        case .finished:
            stream = nil
            body.stop()
            outgoing.append(.endOfResponse)
            return true
        }
    }

    /// Writes what the socket takes; a completed response frees room, so parsing goes on.
    private func writeOutgoing() {
        while outgoingIndex < outgoing.count || (stream != nil && pullFromStream()) {
            let progressed: Bool
            do {
                switch outgoing[outgoingIndex] {
                case .endOfResponse:
                    consumeEndOfResponse()
                    continue
                case .bytes:
                    progressed = try writeBytes()
                case .file(let region, let sent):
                    progressed = try writeFile(region, sent: sent)
                }
            } catch {
                // EPIPE, ECONNRESET: the client is gone.
                close()
                return
            }
            if !progressed { break }
            let now = server.clock.monotonicNow()
            lastWriteProgress = now
            lastActivity = now
        }
        if outgoingIndex == outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
            outgoingIndex = 0
        } else if outgoingIndex > 32 {
            outgoing.removeFirst(outgoingIndex)
            outgoingIndex = 0
        }
    }

    private func consumeEndOfResponse() {
        outgoing[outgoingIndex] = .bytes([], offset: 0)
        outgoingIndex += 1
        unsentResponses -= 1
        // Room for another request: parse again if bytes are waiting.
        if parser.bufferedByteCount > 0 && !stopParsing { pumpAgain = true }
    }

    /// Writes consecutive in-memory chunks with one `sendmsg`; returns whether anything was written.
    private func writeBytes() throws -> Bool {
        var chunks: [[UInt8]] = []
        var offsets: [Int] = []
        var index = outgoingIndex
        scan: while index < outgoing.count, chunks.count < 64 {
            switch outgoing[index] {
            case .bytes(let bytes, let offset):
                if offset < bytes.count {
                    chunks.append(bytes)
                    offsets.append(offset)
                }
            case .endOfResponse: break
            case .file: break scan
            }
            index += 1
        }
        // When a file follows, MSG_MORE holds the head back so it leaves in the same
        // segment as the file's first bytes (what nginx gets from tcp_nopush).
        var fileFollows = false
        if index < outgoing.count, case .file = outgoing[index] { fileFollows = true }
        let flags = Int32(MSG_NOSIGNAL) | (fileFollows ? Int32(MSG_MORE) : 0)
        let written: IOResult<Int> = try withIOVectors(chunks, offsets) { vectors in
            var message = msghdr()
            message.msg_iov = vectors.baseAddress
            message.msg_iovlen = vectors.count
            return try nonBlockingSyscall("sendmsg") { Glibc.sendmsg(descriptor, &message, flags) }
        }
        guard case .processed(var count) = written else { return false }
        // Advance over what was written, consuming response ends between complete chunks.
        while outgoingIndex < outgoing.count {
            switch outgoing[outgoingIndex] {
            case .endOfResponse:
                consumeEndOfResponse()
            case .bytes(let bytes, let offset):
                let remaining = bytes.count - offset
                if count >= remaining {
                    count -= remaining
                    outgoing[outgoingIndex] = .bytes([], offset: 0)
                    outgoingIndex += 1
                } else {
                    outgoing[outgoingIndex] = .bytes(bytes, offset: offset + count)
                    return true
                }
            case .file:
                return true
            }
            if count == 0, outgoingIndex < outgoing.count, case .bytes = outgoing[outgoingIndex] {
                return true
            }
        }
        return true
    }

    private func withIOVectors<T>(
        _ chunks: [[UInt8]], _ offsets: [Int], _ body: (UnsafeMutableBufferPointer<iovec>) throws -> T
    ) throws -> T {
        let vectors = UnsafeMutableBufferPointer<iovec>.allocate(capacity: max(1, chunks.count))
        defer { vectors.deallocate() }
        func fill(_ index: Int) throws -> T {
            if index == chunks.count {
                return try body(UnsafeMutableBufferPointer(rebasing: vectors[0..<index]))
            }
            return try chunks[index].withUnsafeBytes { raw in
                vectors[index] = iovec(
                    iov_base: UnsafeMutableRawPointer(mutating: raw.baseAddress! + offsets[index]),
                    iov_len: raw.count - offsets[index])
                return try fill(index + 1)
            }
        }
        return try fill(0)
    }

    /// Sends part of a file with `sendfile`; returns whether anything was written.
    private func writeFile(_ region: FileRegion, sent: Int) throws -> Bool {
        var offset = off_t(region.offset + sent)
        let result = try nonBlockingSyscall("sendfile") {
            Glibc.sendfile(descriptor, region.handle.descriptor, &offset, region.length - sent)
        }
        guard case .processed(let count) = result else { return false }
        if count == 0 {
            // The file shrank under us: the response cannot be completed honestly.
            throw SystemError(errno: EIO, call: "sendfile (file truncated)")
        }
        if sent + count >= region.length {
            outgoing[outgoingIndex] = .bytes([], offset: 0)
            outgoingIndex += 1
        } else {
            outgoing[outgoingIndex] = .file(region, sent: sent + count)
        }
        return true
    }

    // MARK: Lifecycle

    /// Watches for reading while there is room for requests, and for writing while output is queued.
    private func updateInterest() {
        guard !closed else { return }
        let wantRead = lingerDeadline != nil || (!stopParsing && !peerClosed && capacity > 0)
        let wantWrite = outgoingIndex < outgoing.count
        var events: UInt32 = 0
        if wantRead { events |= cshutter_epollin() | cshutter_epollrdhup() }
        if stream != nil && !peerClosed { events |= cshutter_epollrdhup() }
        if wantWrite { events |= cshutter_epollout() }
        guard events != watchedEvents else { return }
        watchedEvents = events
        try? server.loop.modify(descriptor, events: events)
    }

    /// Closes (or starts a lingering close) once everything owed is written; returns whether it did.
    @discardableResult
    private func finishIfDone() -> Bool {
        guard slots.isEmpty, outgoingIndex == outgoing.count, lingerDeadline == nil, stream == nil else {
            return false
        }
        // After the client's half-close, every complete request it sent has been parsed
        // and answered by now (parseRequests runs until it needs more data).
        guard stopParsing || peerClosed else { return false }
        if peerClosed {
            close()
            return true
        }
        // Half-close and drain what the client still sends for a moment, so the kernel
        // does not answer unread input with a reset that destroys our response in flight.
        Glibc.shutdown(descriptor, Int32(SHUT_WR))
        lingerDeadline = server.clock.monotonicNow().advanced(by: 2_000_000_000)
        updateInterest()
        return true
    }

    /// Stops taking requests; closes now if idle, else after answering every request already started.
    func beginShutdown() {
        stopParsing = true
        // A live stream has no end to wait for.
        if stream != nil {
            close()
            return
        }
        if slots.isEmpty && outgoingIndex == outgoing.count && parser.bufferedByteCount == 0 {
            close()
        } else {
            pump()
        }
    }

    /// Enforces the request, idle and write timeouts (called on every loop tick).
    func checkDeadlines(now: MonotonicInstant) {
        let config = server.configuration
        if let linger = lingerDeadline {
            if now >= linger { close() }
            return
        }
        if outgoingIndex < outgoing.count {
            if stream != nil { noteClientReading(now: now) }
            let timeout = stream?.stallTimeoutMilliseconds ?? config.writeTimeoutMilliseconds
            if now.nanoseconds(since: lastWriteProgress) > UInt64(timeout) * 1_000_000 {
                server.logger.info("closing connection: client stopped reading", ["fd": String(descriptor)])
                close()
            }
            return
        }
        // A stream waiting for its next output is not idle.
        if stream != nil { return }
        if let started = requestStartedAt, slots.isEmpty, !stopParsing,
            now.nanoseconds(since: started) > UInt64(config.requestTimeoutMilliseconds) * 1_000_000
        {
            queueError(
                HTTPError(
                    .requestTimeout,
                    detail: "the request was not complete within \(config.requestTimeoutMilliseconds) ms"),
                startedAt: started)
            pump()
            return
        }
        if slots.isEmpty && parser.bufferedByteCount == 0
            && now.nanoseconds(since: lastActivity) > UInt64(config.idleTimeoutMilliseconds) * 1_000_000
        {
            close()
        }
    }

    /// Counts a client as reading while its unacknowledged bytes go down, even when the socket
    /// takes nothing new: with a cap on unsent bytes (`unsentByteLimit`) the kernel accepts more
    /// only once the client has drained most of a frame, which a slow link may take longer
    /// than the stall timeout to do.
    private func noteClientReading(now: MonotonicInstant) {
        let unacknowledged = Int(cshutter_socket_unacknowledged_bytes(descriptor))
        if unacknowledged >= 0, let previous = lastUnacknowledgedBytes, unacknowledged < previous {
            lastWriteProgress = now
        }
        lastUnacknowledgedBytes = unacknowledged >= 0 ? unacknowledged : nil
    }

    /// Closes the socket and forgets the connection.
    func close() {
        guard !closed else { return }
        closed = true
        server.loop.deregister(descriptor)
        closeDescriptor(descriptor)
        slots.removeAll()
        outgoing.removeAll()
        if let body = stream {
            stream = nil
            body.stop()
        }
        server.connectionClosed(self)
    }

    private func logAccess(_ slot: Slot, _ response: HTTPResponse) {
        guard server.configuration.logRequests else { return }
        let elapsed = server.clock.monotonicNow().nanoseconds(since: slot.startedAt)
        server.logger.info(
            "request",
            [
                "request_id": String(slot.id), "method": slot.method.rawValue, "target": slot.target,
                "status": String(response.status.code), "bytes": String(response.body.count),
                "duration_ms": Timestamp.thousandths(elapsed / 1000),
            ])
    }
}
