import ShutterSystem

/// The decisions of one client connection, with no I/O: events go in, actions come out (the
/// swift-nio shape), so pipelining, streams and timeouts are tested byte by byte with no socket.
///
/// The driver (`HTTPConnection`) reports what happened (readiness, what a read or write did, a
/// handler's answer, a stream's output, a tick) and then calls `nextAction(now:)` until it returns
/// nil, carrying out each action and reporting its result before asking again. Every answer is
/// computed from the state, so an event reported while an action runs (an immediate handler
/// answering, a stream waking in `start`) only changes what the same loop reads next: there is
/// no recursion, however many requests are pipelined.
///
/// Responses go out in request order (pipelining, RFC 9112 §9.3.2). Body bytes are never copied:
/// arrays are shared copy-on-write with the handler's response, and a file is a handle.
///
/// A TLS connection first passes through `TLSPhase`: its first byte is peeked to tell a
/// ClientHello from plain HTTP sent to the TLS port (answered `400` in plain text), then the
/// handshake runs step by step, each step's wish (read or write) becoming the epoll interest,
/// all within the request timeout counted from the accept.
///
/// Ownership: a value owned by its driver, used only on the server's loop thread.
struct HTTPConnectionStateMachine {
    /// What the driver should do next; it reports the outcome before asking for another.
    enum Action {
        /// Read once into the read buffer; report `bytesRead`, `readWouldBlock`,
        /// `peerFinishedSending` or `socketFailed`.
        case read
        /// Send the in-memory chunks of `batch` (see `chunk(at:)`) with one `sendmsg`; report
        /// `wrote`, `writeWouldBlock` or `socketFailed`.
        case writeBytes(WriteBatch)
        /// `sendfile` up to `count` bytes of `region`'s file from `offset`; report as for `writeBytes`.
        case sendFile(FileRegion, offset: Int, count: Int)
        /// Run `handler` for request `id` and report its answer with `handlerFinished`.
        case dispatch(id: UInt64, request: HTTPRequest, handler: RouteHandler, parameters: RouteParameters)
        /// Set the socket's unsent limit (`TCP_NOTSENT_LOWAT`) if given, then `start` the stream.
        case startStream(any HTTPBodyStream, unsentByteLimit: Int?)
        /// Ask the stream for `nextOutput()` and report it with `streamProduced`.
        case pullStream(any HTTPBodyStream)
        /// Tell a stream that has finished that it is done (`stop()`).
        case stopStream(any HTTPBodyStream)
        /// Log one request line.
        case logAccess(AccessLogEntry)
        /// `shutdown(SHUT_WR)`: the lingering close has begun.
        case halfClose
        /// Watch the socket for these events instead of the previous ones.
        case setInterest(Interest)
        /// Close the socket and forget the connection, stopping `stoppingStream` if there is one.
        case close(CloseReason, stoppingStream: (any HTTPBodyStream)?)
        /// TLS: look at the first bytes without taking them (`recv` with `MSG_PEEK`); report
        /// `peeked`, `readWouldBlock`, `peerFinishedSending` or `socketFailed`.
        case peek
        /// TLS: take one step of the handshake; report `handshakeFinished`, `handshakeWants`
        /// or `handshakeFailed`.
        case handshake
        /// TLS: the client spoke plain HTTP to the TLS port; speak plain text to it from now on
        /// (for the `400` that tells it to use https).
        case dropTLS
    }

    /// Where a TLS connection is before it carries HTTP.
    enum TLSPhase: Equatable {
        /// Waiting for the first byte: a ClientHello, or plain HTTP sent to the TLS port.
        case sniffing
        /// The handshake has begun and wants another step.
        case handshaking
        /// Requests and responses flow, encrypted.
        case established
    }

    /// The socket events the connection wants to hear about (`EPOLLIN`, `EPOLLOUT`, `EPOLLRDHUP`).
    struct Interest: OptionSet, Equatable {
        let rawValue: UInt8
        static let read = Interest(rawValue: 1)
        static let write = Interest(rawValue: 2)
        /// The end of the client's sending, without asking for its bytes.
        static let readHangUp = Interest(rawValue: 4)
    }

    /// Readiness reported by the socket.
    struct SocketEvents: OptionSet {
        let rawValue: UInt8
        static let readable = SocketEvents(rawValue: 1)
        static let writable = SocketEvents(rawValue: 2)
        /// The client ended its sending (`EPOLLRDHUP`): a half-close or a full close.
        static let peerClosedSending = SocketEvents(rawValue: 4)
        /// The connection is gone or failed (`EPOLLHUP`, `EPOLLERR`).
        static let hangUp = SocketEvents(rawValue: 8)
    }

    /// Consecutive in-memory chunks of the send queue for one `sendmsg`.
    struct WriteBatch: Equatable {
        /// Indexes into the send queue; entries that are not bytes (`chunk(at:)` is nil) are skipped.
        let range: Range<Int>
        /// A file follows: `MSG_MORE` holds the head back so it leaves in the same segment as
        /// the file's first bytes (what nginx gets from `tcp_nopush`).
        let fileFollows: Bool
    }

    /// Why the connection closes.
    enum CloseReason: Equatable {
        /// Everything owed was written (and the client closed, or the lingering close ended).
        case finished
        /// The socket failed or reset (`EPIPE`, `ECONNRESET`, a hang-up during a stream).
        case socketFailed
        /// Output waited longer than the write or stall timeout with the client reading nothing.
        case clientStoppedReading
        /// Nothing happened for the idle timeout, or a new connection sent nothing within the
        /// header timeout.
        case idle
        /// The server is shutting down (no request in flight, a live stream, or the grace ended).
        case shutdown
        /// `sendfile` found the file shorter than the response promised.
        case fileShrank
        /// The TLS handshake failed (a protocol version or cipher refused, a broken record).
        case handshakeFailed
        /// The TLS handshake did not finish within the request timeout (a silent or slow client).
        case handshakeTimedOut
        /// The server was full and closed this connection, which was waiting for a request, to
        /// take a client with fewer connections (`HTTPServer`'s room-making).
        case madeRoom
    }

    /// One access-log line's fields.
    struct AccessLogEntry {
        let requestID: String
        let method: HTTPMethod
        let target: String
        /// The route's pattern, or `unmatched` (metrics label by it).
        let route: String
        let status: Int
        let bytes: Int
        let startedAt: MonotonicInstant
    }

    /// A request waiting for, or holding, its response; answered strictly in order.
    private struct Slot {
        let id: UInt64
        let method: HTTPMethod
        var target: String
        let version: HTTPVersion
        let keepAlive: Bool
        let startedAt: MonotonicInstant
        /// `100 Continue` is not logged and never closes.
        let interim: Bool
        var response: HTTPResponse?
        /// Headers the policy adds to whatever the response is (CORS).
        var extraHeaders: HTTPHeaders = [:]
        /// The pattern of the route that answered, or `unmatched`.
        var route: String = HTTPMetrics.unmatchedRoute
        /// The id a trusted client gave (`X-Request-Id`), used instead of ours.
        var clientRequestID: String?

        /// The id the response and the logs carry.
        var requestID: String { clientRequestID ?? String(id) }
    }

    /// Bytes queued for the socket: memory goes out with `sendmsg`, files with `sendfile`.
    private enum Outgoing {
        case bytes([UInt8], offset: Int)
        case file(FileRegion, sent: Int)
        /// Marks where a response ends, so responses still unwritten can be counted.
        case endOfResponse
    }

    private static let continueResponse = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
    /// Chunks in one `sendmsg` at most (well under `IOV_MAX`, 1024).
    static let maxChunksPerWrite = 64
    /// Reads per readiness report before other connections get their turn.
    private static let readsPerWakeUp = 4
    /// How long a lingering close drains what the client still sends.
    private static let lingerNanoseconds: UInt64 = 2_000_000_000

    private let configuration: HTTPServerConfiguration
    private let router: Router
    /// Consulted for every routed request before anything runs; nil lets everything through.
    private let policy: (any HTTPRequestPolicy)?
    private let dateCache: HTTPDateCache
    private let requestIDs: HTTPRequestIDGenerator
    /// Where the connection came from; given to every request it carries.
    let peer: PeerAddress?
    /// A read this long may have left more bytes in the socket.
    private let readBufferSize: Int

    private var parser: HTTPRequestParser
    /// The parser said it needs more bytes; nothing is parsed until some arrive.
    private var parserNeedsBytes = false
    /// The policy has seen the head whose body the parser is reading (see `refuseBeforeBody`).
    private var headAwaitingBodyChecked = false
    private var slots: [Slot] = []
    private var outgoing: [Outgoing] = []
    private var outgoingIndex = 0
    /// Responses queued in `outgoing` and not completely written: they count against the
    /// pipelining limit, so a client that sends and never reads cannot make us queue
    /// responses (and their open files) without bound.
    private var unsentResponses = 0

    /// No more requests are parsed: a parse error, `Connection: close`, a stream, or shutdown.
    private var stopParsing = false
    private var shuttingDown = false
    private var peerClosed = false
    private var lingerDeadline: MonotonicInstant?
    private var closed = false
    private var pendingClose: CloseReason?
    /// Reads still to do for the last readiness report.
    private var readsLeft = 0
    /// The last write would have blocked: wait for `EPOLLOUT` before trying again.
    private var writeBlocked = false
    /// The events watched now (the server registers new connections for reading).
    private var interest: Interest = [.read, .readHangUp]

    /// A TLS connection's phase; nil for a plain connection (or one that spoke plain HTTP to the TLS port).
    private(set) var tlsPhase: TLSPhase?
    /// The socket reported readiness since the handshake last wanted to wait.
    private var handshakeReady = false
    /// What the handshake's last step waits for.
    private var handshakeInterest: Interest = [.read, .readHangUp]
    /// The driver has yet to switch to plain text for the `400` to a plain-HTTP client.
    private var dropTLSPending = false
    /// When the connection was accepted: the handshake must finish within the request timeout of it.
    private let acceptedAt: MonotonicInstant

    /// The body stream being written, once its head is queued; it owns the rest of the connection.
    private var stream: (any HTTPBodyStream)?
    private var streamStartPending = false
    /// Set when the stream had nothing to write; its `wake()` pumps again.
    private var streamWaiting = false
    /// A stream that finished and has yet to be told.
    private var streamToStop: (any HTTPBodyStream)?
    /// The send queue's unacknowledged bytes at the last tick (streams only; see `tick`).
    private var lastUnacknowledgedBytes: Int?

    private var requestStartedAt: MonotonicInstant?
    /// When the connection was accepted, until its first request head is complete: a client
    /// that connects and sends nothing (or a head a byte at a time) is held to the header
    /// timeout from here, rather than to the idle timeout, so silent connections cannot keep
    /// every slot for a minute. Later requests on a kept-alive connection have the idle timeout.
    private var awaitingFirstHeadSince: MonotonicInstant?
    private var lastActivity: MonotonicInstant
    private var lastWriteProgress: MonotonicInstant

    /// A connection accepted at `now`; `dateCache` and `requestIDs` are the server's, shared by
    /// every connection on the loop thread.
    init(
        configuration: HTTPServerConfiguration, router: Router, policy: (any HTTPRequestPolicy)? = nil,
        dateCache: HTTPDateCache,
        requestIDs: HTTPRequestIDGenerator, readBufferSize: Int, now: MonotonicInstant,
        peer: PeerAddress? = nil, tls: Bool = false
    ) {
        self.peer = peer
        tlsPhase = tls ? .sniffing : nil
        acceptedAt = now
        self.configuration = configuration
        self.router = router
        self.policy = policy
        self.dateCache = dateCache
        self.requestIDs = requestIDs
        self.readBufferSize = readBufferSize
        parser = HTTPRequestParser(limits: configuration.limits)
        lastActivity = now
        lastWriteProgress = now
        awaitingFirstHeadSince = now
    }

    // MARK: Events

    /// The socket reported readiness.
    mutating func socketReported(_ events: SocketEvents) {
        guard !closed else { return }
        if events.contains(.writable) || events.contains(.hangUp) { writeBlocked = false }
        if tlsPhase == .handshaking {
            // Any readiness is worth a step: a hang-up makes the step fail and close.
            if !events.isEmpty { handshakeReady = true }
            return
        }
        if stream != nil {
            // A stream reads no more requests. A reset (a client that closed and was then sent
            // more) ends it at once; the end of the client's sending (EPOLLRDHUP) may be a
            // half-close by a client that still reads (`nc -N`, socat), so the stream goes on
            // and a client that closed entirely is noticed on the next write.
            if events.contains(.hangUp) {
                pendingClose = .socketFailed
            } else if events.contains(.peerClosedSending) {
                peerClosed = true
            }
            return
        }
        if !events.isDisjoint(with: [.readable, .peerClosedSending, .hangUp]) {
            readsLeft = Self.readsPerWakeUp
        }
    }

    /// A read returned `bytes`; `moreBuffered` says the transport holds more already read
    /// from the socket (decrypted TLS records), which no readiness event would announce.
    mutating func bytesRead(
        _ bytes: UnsafeRawBufferPointer, now: MonotonicInstant, moreBuffered: Bool = false
    ) {
        guard !closed else { return }
        lastActivity = now
        if lingerDeadline != nil {
            // Discarding what the client still sends; keep reading until it closes.
            readsLeft -= 1
            return
        }
        parser.append(bytes)
        parserNeedsBytes = false
        if moreBuffered {
            readsLeft = max(readsLeft - 1, 1)
        } else {
            readsLeft = bytes.count < readBufferSize ? 0 : readsLeft - 1
        }
    }

    /// A peek (TLS, first bytes) saw `bytes` without taking them.
    mutating func peeked(_ bytes: UnsafeRawBufferPointer, now: MonotonicInstant) {
        guard !closed, tlsPhase == .sniffing, let first = bytes.first else { return }
        readsLeft = 0
        lastActivity = now
        if Self.startsTLSHandshake(first) {
            tlsPhase = .handshaking
            handshakeReady = true
            return
        }
        // Plain HTTP (or anything else) on the TLS port: a clear answer instead of a handshake
        // that would wait for a ClientHello until the timeout. The request itself stays unread
        // and is drained by the lingering close.
        tlsPhase = nil
        dropTLSPending = true
        queueError(
            HTTPError(
                .badRequest,
                detail: "this port speaks HTTPS (TLS); use an https:// URL instead of http://"),
            startedAt: acceptedAt)
    }

    /// Whether a connection's first byte opens a TLS handshake record: every ClientHello comes in
    /// one, whose content type is handshake (22, RFC 8446 §5.1), while an HTTP request line
    /// starts with a method's letter.
    static func startsTLSHandshake(_ firstByte: UInt8) -> Bool { firstByte == 0x16 }

    /// The handshake finished: the connection carries HTTP now. The client's first request may
    /// already sit in the transport, so a read is tried at once.
    mutating func handshakeFinished(now: MonotonicInstant) {
        guard !closed, tlsPhase == .handshaking else { return }
        tlsPhase = .established
        readsLeft = Self.readsPerWakeUp
        lastActivity = now
    }

    /// The handshake's step waits for the socket to be readable (`writable` false) or writable.
    mutating func handshakeWants(writable: Bool) {
        guard !closed, tlsPhase == .handshaking else { return }
        handshakeInterest = writable ? [.write] : [.read, .readHangUp]
    }

    /// The handshake failed: nothing can be said to the client in HTTP.
    mutating func handshakeFailed() {
        guard !closed else { return }
        pendingClose = .handshakeFailed
    }

    /// A read found nothing to read.
    mutating func readWouldBlock() { readsLeft = 0 }

    /// A read returned end of file: the client will send nothing more.
    mutating func peerFinishedSending() {
        guard !closed else { return }
        peerClosed = true
        readsLeft = 0
        if lingerDeadline != nil { pendingClose = .finished }
    }

    /// A write (either kind) took `count` bytes.
    mutating func wrote(_ count: Int, now: MonotonicInstant) {
        guard !closed, outgoingIndex < outgoing.count else { return }
        lastWriteProgress = now
        lastActivity = now
        if case .file(let region, let sent) = outgoing[outgoingIndex] {
            if count == 0 {
                // The file shrank under us: the response cannot be completed honestly.
                pendingClose = .fileShrank
            } else if sent + count >= region.length {
                // Written: let go of the file now rather than when the queue is emptied.
                outgoing[outgoingIndex] = .bytes([], offset: 0)
                outgoingIndex += 1
            } else {
                outgoing[outgoingIndex] = .file(region, sent: sent + count)
            }
            return
        }
        advance(over: count)
        if outgoingIndex == outgoing.count {
            outgoing.removeAll(keepingCapacity: true)
            outgoingIndex = 0
        } else if outgoingIndex > 32 {
            outgoing.removeFirst(outgoingIndex)
            outgoingIndex = 0
        }
    }

    /// Advances over `count` bytes written from the queue, consuming response ends between
    /// complete chunks.
    private mutating func advance(over count: Int) {
        var remainingCount = count
        while outgoingIndex < outgoing.count {
            switch outgoing[outgoingIndex] {
            case .endOfResponse:
                consumeEndOfResponse()
            case .bytes(let bytes, let offset):
                let remaining = bytes.count - offset
                if remainingCount >= remaining {
                    remainingCount -= remaining
                    outgoing[outgoingIndex] = .bytes([], offset: 0)
                    outgoingIndex += 1
                } else {
                    outgoing[outgoingIndex] = .bytes(bytes, offset: offset + remainingCount)
                    return
                }
            case .file:
                return
            }
            if remainingCount == 0, outgoingIndex < outgoing.count, case .bytes = outgoing[outgoingIndex] {
                return
            }
        }
    }

    /// A write would have blocked.
    mutating func writeWouldBlock() { writeBlocked = true }

    /// A read, write or socket call failed: the client is gone, or the socket can no longer be
    /// driven (the driver logs what it must).
    mutating func socketFailed() {
        guard !closed else { return }
        pendingClose = .socketFailed
    }

    /// The handler of request `id` answered (on the loop thread).
    mutating func handlerFinished(id: UInt64, response: HTTPResponse) {
        guard !closed, let index = slots.firstIndex(where: { $0.id == id && !$0.interim }) else { return }
        // A stream keeps the connection to the end, so nothing pipelined behind it may run:
        // parsing stops here, before the next request is dispatched. (A stream returned by a
        // task comes after requests parsed meanwhile had run; return streams from `.immediate`
        // handlers.)
        if response.body.isStream { stopParsing = true }
        slots[index].response = response
    }

    /// The stream answered a `pullStream`.
    mutating func streamProduced(_ output: HTTPStreamOutput) {
        guard !closed, let body = stream else { return }
        switch output {
        case .chunks(let chunks):
            let queuedBefore = outgoing.count
            for chunk in chunks where !chunk.isEmpty { outgoing.append(.bytes(chunk, offset: 0)) }
            if outgoing.count == queuedBefore { streamWaiting = true }
        case .waiting:
            streamWaiting = true
        case .finished:
            stream = nil
            streamToStop = body
            outgoing.append(.endOfResponse)
        }
    }

    /// The stream has output again (its writer's `wake()`).
    mutating func streamWoke(now: MonotonicInstant) {
        guard streamWaiting, !closed, stream != nil else { return }
        streamWaiting = false
        // The stall clock starts when there is something to send again, not at the last write
        // before the wait.
        lastWriteProgress = now
    }

    /// Whether the next `tick` wants the socket's unacknowledged byte count (`SIOCOUTQ`).
    var wantsUnacknowledgedByteCount: Bool {
        !closed && lingerDeadline == nil && stream != nil && outgoingIndex < outgoing.count
    }

    /// Enforces the header, request, idle, write and stall timeouts and the lingering close's end.
    ///
    /// `unacknowledgedBytes` is the send queue's count when `wantsUnacknowledgedByteCount`
    /// (nil if unknown): a streaming client counts as reading while it goes down, even when
    /// the socket takes nothing new, because with a cap on unsent bytes (`unsentByteLimit`) the
    /// kernel accepts more only once the client has drained most of a frame, which a slow link
    /// may take longer than the stall timeout to do.
    mutating func tick(now: MonotonicInstant, unacknowledgedBytes: Int?) {
        guard !closed, pendingClose == nil else { return }
        if let linger = lingerDeadline {
            if now >= linger { pendingClose = .finished }
            return
        }
        if let phase = tlsPhase, phase != .established {
            // A silent or slow handshake holds a connection like a slow request (slowloris).
            if now.nanoseconds(since: acceptedAt) > Self.nanoseconds(configuration.requestTimeoutMilliseconds)
            {
                pendingClose = .handshakeTimedOut
            }
            return
        }
        if outgoingIndex < outgoing.count {
            if stream != nil {
                if let unacknowledged = unacknowledgedBytes, let previous = lastUnacknowledgedBytes,
                    unacknowledged < previous
                {
                    lastWriteProgress = now
                }
                lastUnacknowledgedBytes = unacknowledgedBytes
            }
            let timeout = stream?.stallTimeoutMilliseconds ?? configuration.writeTimeoutMilliseconds
            if now.nanoseconds(since: lastWriteProgress) > Self.nanoseconds(timeout) {
                pendingClose = .clientStoppedReading
            }
            return
        }
        // A stream waiting for its next output is not idle.
        if stream != nil { return }
        let headerTimeout = configuration.headerTimeoutMilliseconds
        if let accepted = awaitingFirstHeadSince, !stopParsing,
            now.nanoseconds(since: accepted) > Self.nanoseconds(headerTimeout)
        {
            awaitingFirstHeadSince = nil
            if parser.bufferedByteCount == 0 {
                // Nothing was said, so nothing is answered (a browser's unused preconnection
                // lands here too); the access log stays free of requests never made.
                pendingClose = .idle
            } else {
                queueError(
                    HTTPError(
                        .requestTimeout,
                        detail: "the request head was not complete within \(headerTimeout) ms of connecting"),
                    startedAt: requestStartedAt ?? accepted)
            }
            return
        }
        let requestTimeout = configuration.requestTimeoutMilliseconds
        if let started = requestStartedAt, slots.isEmpty, !stopParsing,
            now.nanoseconds(since: started) > Self.nanoseconds(requestTimeout)
        {
            queueError(
                HTTPError(
                    .requestTimeout, detail: "the request was not complete within \(requestTimeout) ms"),
                startedAt: started)
            return
        }
        if slots.isEmpty && parser.bufferedByteCount == 0
            && now.nanoseconds(since: lastActivity) > Self.nanoseconds(configuration.idleTimeoutMilliseconds)
        {
            pendingClose = .idle
        }
    }

    /// Since when the connection has been waiting for a request while owing nothing: no request
    /// handled or answered, no stream, nothing left to write, not closing. Nil when it owes
    /// something. A silent connection, a keep-alive one between requests, a TLS handshake not
    /// finished and a head arriving a byte at a time all count: closing one loses no answer.
    var waitingForRequestSince: MonotonicInstant? {
        guard !closed, pendingClose == nil, lingerDeadline == nil, stream == nil, !streamStartPending,
            slots.isEmpty, outgoingIndex == outgoing.count, !stopParsing
        else { return nil }
        if let phase = tlsPhase, phase != .established { return acceptedAt }
        return awaitingFirstHeadSince ?? lastActivity
    }

    /// The server closes this connection, which `waitingForRequestSince` said owes nothing, to
    /// make room for another client's.
    mutating func closeToMakeRoom() {
        guard !closed, waitingForRequestSince != nil else { return }
        pendingClose = .madeRoom
    }

    /// Stops taking requests; closes now if idle or streaming, else after answering every
    /// request already started.
    mutating func beginShutdown() {
        guard !closed else { return }
        shuttingDown = true
        stopParsing = true
        // A live stream has no end to wait for.
        if stream != nil
            || (slots.isEmpty && outgoingIndex == outgoing.count && parser.bufferedByteCount == 0)
        {
            pendingClose = .shutdown
        }
    }

    /// The shutdown's grace period ended: close whatever is still owed.
    mutating func shutdownGraceEnded() {
        guard !closed else { return }
        pendingClose = .shutdown
    }

    // MARK: Actions

    /// The next thing to do, or nil when the connection waits for an event.
    mutating func nextAction(now: MonotonicInstant) -> Action? {
        if closed { return nil }
        if let start = takeStreamStart() { return start }
        if let reason = pendingClose { return close(reason) }
        if let body = streamToStop {
            streamToStop = nil
            return .stopStream(body)
        }
        if dropTLSPending {
            dropTLSPending = false
            return .dropTLS
        }
        if let phase = tlsPhase, phase != .established { return nextHandshakeAction(phase) }
        if readsLeft > 0 && mayReadMore { return .read }
        if let action = parseRequests(now: now) { return action }
        // The parser has used up what it held: the reads this readiness allows go on (bytes a
        // TLS transport holds decrypted get no readiness report of their own).
        if readsLeft > 0 && mayReadMore { return .read }
        if let action = queueReadyResponses() { return action }
        // Started before its head is written, so it is watching for output when the client has the head.
        if let start = takeStreamStart() { return start }
        if let action = nextWrite() { return action }
        if let action = finishIfDone(now: now) { return action }
        return updateInterest()
    }

    /// Before TLS is established: peek at the first byte, step the handshake, or wait.
    private mutating func nextHandshakeAction(_ phase: TLSPhase) -> Action? {
        // The client closed before a ClientHello: there is nobody to answer.
        if peerClosed { return close(.finished) }
        let wanted: Interest
        switch phase {
        case .sniffing:
            if readsLeft > 0 { return .peek }
            wanted = [.read, .readHangUp]
        case .handshaking:
            if handshakeReady {
                handshakeReady = false
                return .handshake
            }
            wanted = handshakeInterest
        case .established:
            return nil
        }
        guard wanted != interest else { return nil }
        interest = wanted
        return .setInterest(wanted)
    }

    private mutating func takeStreamStart() -> Action? {
        guard streamStartPending, let stream else { return nil }
        streamStartPending = false
        return .startStream(stream, unsentByteLimit: stream.unsentByteLimit)
    }

    /// The in-memory chunk at `index` of the send queue and the offset written so far, or nil
    /// for an entry that is not bytes (for carrying out `writeBytes`).
    func chunk(at index: Int) -> (bytes: [UInt8], offset: Int)? {
        guard case .bytes(let bytes, let offset) = outgoing[index], offset < bytes.count else { return nil }
        return (bytes, offset)
    }

    private var capacity: Int {
        configuration.maxPipelinedRequests - slots.count - unsentResponses
    }

    /// Whether another read may add to what the parser holds: only once it has used up what it
    /// has (or needs more to finish a request), and always while a lingering close discards.
    /// A client that pipelines thousands of requests and reads none of the answers would
    /// otherwise have every readiness report take four reads (256 KiB) more into the parser
    /// before it parses any: the pipelining limit stops the parsing, not the reading, and a
    /// hundred such connections held 25 MB. The socket's own buffer, not ours, holds the rest,
    /// and TCP's window tells the client to wait.
    private var mayReadMore: Bool {
        lingerDeadline != nil || parserNeedsBytes || parser.bufferedByteCount == 0
    }

    /// Turns buffered bytes into dispatched requests while there is room for their responses.
    private mutating func parseRequests(now: MonotonicInstant) -> Action? {
        while !stopParsing && lingerDeadline == nil && !parserNeedsBytes && capacity > 0 {
            let action = parser.next()
            // A head is complete once the parser reads its body or has a request (or an error).
            if parser.isReadingBody {
                awaitingFirstHeadSince = nil
                if !headAwaitingBodyChecked {
                    headAwaitingBodyChecked = true
                    if refuseBeforeBody(now: now) { return nil }
                }
            }
            switch action {
            case .needMoreData:
                parserNeedsBytes = true
                if parser.bufferedByteCount > 0 {
                    if requestStartedAt == nil { requestStartedAt = now }
                } else {
                    requestStartedAt = nil
                }
            case .sendContinue:
                awaitingFirstHeadSince = nil
                slots.append(
                    Slot(
                        id: 0, method: .get, target: "", version: .http11, keepAlive: true, startedAt: now,
                        interim: true, response: HTTPResponse(status: .continue)))
            case .request(let request):
                awaitingFirstHeadSince = nil
                headAwaitingBodyChecked = false
                let startedAt = requestStartedAt ?? now
                requestStartedAt = nil
                if let action = dispatch(request, startedAt: startedAt) { return action }
            case .error(let error):
                awaitingFirstHeadSince = nil
                queueError(HTTPError(error.status, detail: error.detail), startedAt: requestStartedAt ?? now)
            }
        }
        return nil
    }

    /// Answers with `error` and closes after it (the request stream can no longer be trusted).
    private mutating func queueError(_ error: HTTPError, startedAt: MonotonicInstant) {
        stopParsing = true
        requestStartedAt = nil
        slots.append(
            Slot(
                id: requestIDs.next(), method: .get, target: "-", version: .http11, keepAlive: false,
                startedAt: startedAt, interim: false, response: error.response()))
    }

    /// Asks the policy about the request whose body has yet to arrive, and answers a refusal at
    /// once, closing after it: otherwise a client with no credentials could make the server
    /// buffer a body of up to `maxBodyBytes` on every connection it may open (a megabyte each,
    /// hundreds of megabytes from one address) only to be refused once it had all arrived. A
    /// request let through is asked again, complete, when it is dispatched.
    private mutating func refuseBeforeBody(now: MonotonicInstant) -> Bool {
        guard let policy, var request = parser.headAwaitingBody, let path = request.path else { return false }
        request.peer = peer
        let match = Self.routeMatch(router.resolve(method: request.method, path: path))
        guard
            case .respond(let response, let loggedTarget) = policy.evaluate(request, path: path, route: match)
        else { return false }
        // The body stays unread: the lingering close after the answer drains it.
        stopParsing = true
        slots.append(
            Slot(
                id: requestIDs.next(), method: request.method, target: loggedTarget ?? request.target,
                version: request.version, keepAlive: false, startedAt: requestStartedAt ?? now,
                interim: false,
                response: response))
        requestStartedAt = nil
        return true
    }

    private static func routeMatch(_ resolution: Router.Resolution) -> RouteMatch {
        switch resolution {
        case .notFound: .notFound
        case .methodNotAllowed(let allowed): .methodNotAllowed(allowed: allowed)
        case .handler(_, _, let scope, _): .handler(scope: scope)
        }
    }

    /// Queues a slot for `request`, answering what routing alone decides; returns the
    /// dispatch of its handler otherwise.
    private mutating func dispatch(_ request: HTTPRequest, startedAt: MonotonicInstant) -> Action? {
        var request = request
        request.peer = peer
        let id = requestIDs.next()
        let keepAlive = request.keepAlive && !shuttingDown
        if !keepAlive { stopParsing = true }
        var slot = Slot(
            id: id, method: request.method, target: request.target, version: request.version,
            keepAlive: keepAlive, startedAt: startedAt, interim: false, response: nil)
        slot.clientRequestID = Self.trustedRequestID(request, peer: peer)
        request.id = slot.requestID
        guard let path = request.path else {
            slot.response = HTTPError(.badRequest, detail: "the request path has an invalid percent-encoding")
                .response()
            slots.append(slot)
            return nil
        }
        let resolution = router.resolve(method: request.method, path: path)
        if let policy {
            switch policy.evaluate(request, path: path, route: Self.routeMatch(resolution)) {
            case .respond(let response, let loggedTarget):
                slot.response = response
                if let loggedTarget { slot.target = loggedTarget }
                slots.append(slot)
                return nil
            case .proceed(let headers, let target, let expiresAt):
                slot.extraHeaders = headers
                request.accessExpiresAt = expiresAt
                if let target {
                    request.target = target
                    slot.target = target
                }
            }
        }
        switch resolution {
        case .notFound:
            slot.response = HTTPError(.notFound, detail: "no resource at \(path)").response()
        case .methodNotAllowed(let allowed):
            let allow = allowed.map(\.rawValue).joined(separator: ", ")
            slot.response = HTTPError(
                .methodNotAllowed, detail: "\(request.method) is not allowed on \(path); use \(allow)",
                headers: ["Allow": allow]
            ).response()
        case .handler(let handler, let parameters, _, let route):
            slot.route = route
            slots.append(slot)
            return .dispatch(id: id, request: request, handler: handler, parameters: parameters)
        }
        slots.append(slot)
        return nil
    }

    /// The client's `X-Request-Id`, kept when it comes from this machine (a reverse proxy or a
    /// script beside the daemon, which can trace a request through its logs and ours) and is a
    /// short token that cannot break a header or a log line; nil otherwise.
    static func trustedRequestID(_ request: HTTPRequest, peer: PeerAddress?) -> String? {
        guard peer?.isLoopback == true, let value = request.headers["X-Request-Id"],
            (1...64).contains(value.utf8.count),
            value.utf8.allSatisfy({ byte in
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A) || byte == 0x2D
                    || byte == 0x2E || byte == 0x5F || byte == 0x3A
            })
        else { return nil }
        return value
    }

    /// Serializes every response that is next in order and ready; returns an access-log line
    /// as it goes (the rest are queued on the next calls).
    private mutating func queueReadyResponses() -> Action? {
        while let first = slots.first, var response = first.response {
            slots.removeFirst()
            for (name, value) in first.extraHeaders { response.headers.add(name: name, value: value) }
            if first.interim {
                outgoing.append(.bytes(Self.continueResponse, offset: 0))
                continue
            }
            // The last response before a close says so; earlier ones, already promised, keep the connection.
            // A stream has no end but the close, so it is always the last.
            let isLast = slots.isEmpty && (stopParsing || shuttingDown)
            let keepAlive = first.keepAlive && !isLast && !response.body.isStream
            let head = HTTPResponseHead.serialize(
                response, version: first.version, keepAlive: keepAlive, date: dateCache.current(),
                server: configuration.serverName, requestID: first.requestID)
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
                    unsentResponses += 1
                    stopParsing = true
                    slots.removeAll()
                    if shuttingDown {
                        // Reached only after shutdown began (it waited behind a slower answer):
                        // the head, then the close, instead of a stream that would hold the shutdown.
                        outgoing.append(.endOfResponse)
                    } else {
                        stream = body
                        streamStartPending = true
                    }
                    return accessLogEntry(first, response)
                }
            }
            outgoing.append(.endOfResponse)
            unsentResponses += 1
            if !keepAlive { stopParsing = true }
            if let entry = accessLogEntry(first, response) { return entry }
        }
        return nil
    }

    private func accessLogEntry(_ slot: Slot, _ response: HTTPResponse) -> Action? {
        guard configuration.logRequests || configuration.collectMetrics else { return nil }
        return .logAccess(
            AccessLogEntry(
                requestID: slot.requestID, method: slot.method, target: slot.target, route: slot.route,
                status: response.status.code, bytes: response.body.count, startedAt: slot.startedAt))
    }

    /// The next write, or a pull from the stream once everything before it is written.
    private mutating func nextWrite() -> Action? {
        guard !writeBlocked else { return nil }
        while outgoingIndex < outgoing.count {
            switch outgoing[outgoingIndex] {
            case .endOfResponse:
                consumeEndOfResponse()
            case .bytes:
                return .writeBytes(nextBatch())
            case .file(let region, let sent):
                return .sendFile(region, offset: region.offset + sent, count: region.length - sent)
            }
        }
        outgoing.removeAll(keepingCapacity: true)
        outgoingIndex = 0
        if let stream, !streamWaiting, !streamStartPending { return .pullStream(stream) }
        return nil
    }

    /// Consecutive in-memory chunks from the front of the queue, up to a file.
    private func nextBatch() -> WriteBatch {
        var chunks = 0
        var index = outgoingIndex
        scan: while index < outgoing.count, chunks < Self.maxChunksPerWrite {
            switch outgoing[index] {
            case .bytes(let bytes, let offset): if offset < bytes.count { chunks += 1 }
            case .endOfResponse: break
            case .file: break scan
            }
            index += 1
        }
        var fileFollows = false
        if index < outgoing.count, case .file = outgoing[index] { fileFollows = true }
        return WriteBatch(range: outgoingIndex..<index, fileFollows: fileFollows)
    }

    private mutating func consumeEndOfResponse() {
        outgoingIndex += 1
        unsentResponses -= 1
    }

    /// Closes, or starts a lingering close, once everything owed is written.
    private mutating func finishIfDone(now: MonotonicInstant) -> Action? {
        guard slots.isEmpty, outgoingIndex == outgoing.count, lingerDeadline == nil, stream == nil else {
            return nil
        }
        // After the client's half-close, every complete request it sent has been parsed
        // and answered by now (parsing runs until it needs more data).
        guard stopParsing || peerClosed else { return nil }
        if peerClosed { return close(.finished) }
        // Half-close and drain what the client still sends for a moment, so the kernel
        // does not answer unread input with a reset that destroys our response in flight
        // (RFC 9112 §9.6).
        lingerDeadline = now.advanced(by: Self.lingerNanoseconds)
        return .halfClose
    }

    /// Watches for reading while there is room for requests, and for writing while output is queued.
    private mutating func updateInterest() -> Action? {
        let wantRead = lingerDeadline != nil || (!stopParsing && !peerClosed && capacity > 0 && mayReadMore)
        var wanted: Interest = []
        if wantRead { wanted.formUnion([.read, .readHangUp]) }
        if stream != nil && !peerClosed { wanted.insert(.readHangUp) }
        if outgoingIndex < outgoing.count { wanted.insert(.write) }
        guard wanted != interest else { return nil }
        interest = wanted
        return .setInterest(wanted)
    }

    private mutating func close(_ reason: CloseReason) -> Action {
        closed = true
        pendingClose = nil
        slots.removeAll()
        outgoing.removeAll()
        outgoingIndex = 0
        let body = stream ?? streamToStop
        stream = nil
        streamToStop = nil
        return .close(reason, stoppingStream: body)
    }

    private static func nanoseconds(_ milliseconds: Int) -> UInt64 { UInt64(milliseconds) * 1_000_000 }
}
