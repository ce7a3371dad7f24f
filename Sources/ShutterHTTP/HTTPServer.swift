import CShutterLinux
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The HTTP/1.1 server: a listening socket and its connections, all owned by one event loop;
/// HTTPS when it is given a `TLSContext`.
public final class HTTPServer: @unchecked Sendable {
    // @unchecked Sendable: every mutable field is touched only on `loop`'s thread;
    // other threads reach the server only through `loop.execute`.
    public let configuration: HTTPServerConfiguration
    public let loop: EventLoop
    let router: Router
    /// Access control and browser defences, consulted before every handler (nil: none).
    let policy: (any HTTPRequestPolicy)?
    let logger: Logger
    /// Every timeout (request, idle, write, stream stall, linger, shutdown grace, rejected-connection
    /// drain) and the `Date` header are decided on this clock.
    let clock: any Clock
    let dateCache: HTTPDateCache
    /// Request lines, written in a batch once the loop has handled its events.
    let accessLog: AccessLog
    let requestIDs = HTTPRequestIDGenerator()
    /// Requests by route and status class, with their latency, when `collectMetrics` is on.
    public let metrics: HTTPMetrics

    /// The listening sockets (one per `listen` address, or those systemd passed).
    private var listeners: [Listener] = []
    private var connections: [Int32: HTTPConnection] = [:]
    /// Open connections by client address, for `maxConnectionsPerPeer`; an address leaves
    /// when its last connection closes.
    private var connectionsByPeer: [String: Int] = [:]
    /// Addresses refused over their limit since they last went under it, with how many were
    /// refused: one log line when an episode starts and one when it ends.
    private var peersOverLimit: [String: Int] = [:]
    /// Connections refused over `maxConnections` since the count last went under it, or nil:
    /// logged once per episode too, so a flood of refusals is not a flood of log lines.
    private var refusedOverLimit: Int?
    /// Waiting connections closed to make room since the server was last under its limit (see
    /// `makeRoom`); one line when an episode starts and one when it ends.
    private var closedToMakeRoom = 0
    /// Set while `makeRoom` closes a connection: the server is full again at once, so that close
    /// does not end the episode.
    private var makingRoom = false
    /// Connections refused over the limit, drained briefly so the 503 is not destroyed by a reset.
    private var rejected: [Int32: RejectedConnection] = [:]
    private var shutdownCompletion: (() -> Void)?
    private var shutdownDeadline: MonotonicInstant?
    /// Scratch buffer for reads, shared by all connections (only one runs at a time on the loop).
    let readBuffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 64 * 1024, alignment: 16)
    /// Scratch vectors for `sendmsg`, shared the same way.
    let ioVectors = UnsafeMutableBufferPointer<iovec>.allocate(
        capacity: HTTPConnectionStateMachine.maxChunksPerWrite)
    /// Scratch for TLS (small chunks gathered into a record, or a file region read without kTLS),
    /// shared the same way: OpenSSL keeps its own copy of a record it could not send yet.
    let tlsScratch = UnsafeMutableRawBufferPointer.allocate(
        byteCount: TLSTransport.fileChunkSize, alignment: 16)
    /// The certificate new connections get; nil serves plain HTTP. Replaced by `replaceTLSContext`.
    public private(set) var tlsContext: TLSContext?
    /// Whether the first TLS connection has said how records are sent (kTLS or `SSL_write`).
    private var tlsModeLogged = false
    /// The last failure logged for each socket call whose failure does not stop the server; a
    /// repeating failure is logged once, until the call succeeds again or fails differently.
    private var loggedFailures: [SocketCall: SystemError] = [:]
    /// Set while accepting is paused for lack of descriptors.
    private var acceptPausedBy: SystemError?
    /// The accept failure already logged; cleared by the next successful accept, so an
    /// episode of retries on every tick is logged once.
    private var loggedAcceptFailure: SystemError?
    /// The port the first TCP listener bound (useful with port 0).
    public private(set) var boundPort: Int = 0
    /// Every address listened on, as bound (`127.0.0.1:8080`, `unix:/run/shutterd.sock`).
    public private(set) var boundAddresses: [String] = []

    /// A server that will listen as `configuration` says, run on `loop`, and time everything on `clock`.
    public init(
        configuration: HTTPServerConfiguration, router: Router, policy: (any HTTPRequestPolicy)? = nil,
        logger: Logger, loop: EventLoop, clock: any Clock = SystemClock(), tls: TLSContext? = nil,
        metrics: HTTPMetrics = HTTPMetrics()
    ) {
        self.metrics = metrics
        self.configuration = configuration
        self.tlsContext = tls
        self.router = router
        self.policy = policy
        self.logger = logger
        self.loop = loop
        self.clock = clock
        dateCache = HTTPDateCache(clock: clock)
        accessLog = AccessLog(logger: logger, clock: clock)
    }

    deinit {
        readBuffer.deallocate()
        ioVectors.deallocate()
        tlsScratch.deallocate()
    }

    /// Number of open connections.
    public var connectionCount: Int { connections.count }

    /// Binds and listens on every configured address, or takes over `inherited` listening
    /// sockets (systemd's socket activation) instead; call before `loop.run()` or on the loop
    /// thread. A failure closes whatever was opened.
    public func start(inherited: [Int32] = []) throws {
        do {
            if inherited.isEmpty {
                let addresses =
                    configuration.listeners.isEmpty
                    ? [ListenAddress.tcp(host: configuration.host, port: configuration.port)]
                    : configuration.listeners
                for address in addresses { try listeners.append(Listener.bind(address, server: self)) }
            } else {
                for descriptor in inherited { try listeners.append(Listener.adopt(descriptor, server: self)) }
            }
            for listener in listeners {
                try loop.register(listener.descriptor, events: cshutter_epollin(), handler: listener)
            }
        } catch {
            closeListeners()
            throw error
        }
        boundAddresses = listeners.map(\.name)
        boundPort = listeners.first { !$0.isUnix }?.port ?? 0
        loop.onTick = { [unowned self] in self.checkDeadlines() }
    }

    /// Stops listening: each socket deregistered and closed, each unix socket file this server
    /// made removed.
    private func closeListeners() {
        for listener in listeners { listener.close(loop: loop) }
        listeners.removeAll()
    }

    /// Stops accepting, lets in-flight responses finish, then closes every connection and calls `completion`.
    public func shutdown(completion: @escaping () -> Void) {
        assert(loop.inEventLoop)
        closeListeners()
        shutdownCompletion = completion
        shutdownDeadline = clock.monotonicNow().advanced(
            by: UInt64(configuration.shutdownGraceMilliseconds) * 1_000_000)
        for connection in Array(connections.values) { connection.beginShutdown() }
        finishShutdownIfDone()
    }

    /// Accepts every pending connection on `listener` (its socket is readable).
    func acceptPending(on listener: Listener) {
        let listenDescriptor = listener.descriptor
        while listeners.contains(where: { $0 === listener }) {
            let accepted: IOResult<Int32>
            var peerStorage = sockaddr_storage()
            var peerLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            do {
                accepted = try withUnsafeMutableBytes(of: &peerStorage) { raw in
                    try nonBlockingSyscall("accept4") {
                        cshutter_accept4(
                            listenDescriptor, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self),
                            &peerLength,
                            Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                    }
                }
            } catch let error as SystemError {
                // EMFILE/ENFILE/ENOBUFS/ENOMEM: out of resources for now. The listening socket
                // is level-triggered and would report the same pending connection again at
                // once, so stop watching it until a connection closes or the next tick.
                pauseAccepting(error)
                return
            } catch {
                return
            }
            guard case .processed(let descriptor) = accepted else { return }
            if loggedAcceptFailure != nil {
                loggedAcceptFailure = nil
                logger.notice("accepting connections again")
            }
            // A unix socket's clients are on this machine; its file mode decided who they are.
            let peer = listener.isUnix ? PeerAddress.unixSocket : PeerAddress(storage: peerStorage)
            if connections.count >= configuration.maxConnections && !makeRoom(for: peer) {
                if let refused = refusedOverLimit {
                    refusedOverLimit = refused + 1
                } else {
                    refusedOverLimit = 1
                    logger.warning(
                        "connections refused: over limit",
                        ["max_connections": String(configuration.maxConnections)])
                }
                rejectOverLimit(descriptor, detail: "too many connections; try again later")
                continue
            }
            if let peer,
                connectionsByPeer[peer.host, default: 0] >= configuration.effectiveMaxConnectionsPerPeer
            {
                refuseOverPeerLimit(descriptor, peer)
                continue
            }
            if !listener.isUnix { disableNagle(descriptor) }
            var tls: TLSTransport?
            // HTTPS on TCP; a unix socket stays plain (nothing crosses a network).
            if let tlsContext, !listener.isUnix {
                do {
                    tls = try TLSTransport(context: tlsContext, descriptor: descriptor, scratch: tlsScratch)
                } catch {
                    // Out of memory in OpenSSL: this connection cannot be served.
                    logger.error(
                        "closing a new connection: no TLS state for it", ["error": error.description])
                    closeDescriptor(descriptor)
                    continue
                }
            }
            let connection = HTTPConnection(
                descriptor: descriptor, peer: peer, server: self, tls: tls)
            do {
                try loop.register(
                    descriptor, events: cshutter_epollin() | cshutter_epollrdhup(), handler: connection)
                connections[descriptor] = connection
                if let peer { connectionsByPeer[peer.host, default: 0] += 1 }
            } catch {
                closeDescriptor(descriptor)
            }
        }
    }

    /// The server is full: closes one connection that is waiting for a request and owes nothing,
    /// from the client address holding the most connections, if that address would still hold
    /// more than `newcomer`'s after the swap; the one of its connections that has waited longest.
    /// Returns whether a slot was freed.
    ///
    /// Silent connections from many addresses could otherwise hold every slot until the header
    /// timeout, and an honest client would get only 503s; the per-address limit alone cannot
    /// stop several addresses. Taking from the address with the most means an attacker's new
    /// connection can only replace its own when its addresses are uneven, so attackers cannot
    /// churn each other out for ever, and a client with few connections gets in. Nothing owed is
    /// lost: a closed keep-alive connection is what HTTP clients expect and retry.
    private func makeRoom(for newcomer: PeerAddress?) -> Bool {
        let newcomerHolds = newcomer.map { connectionsByPeer[$0.host, default: 0] } ?? 0
        // A client at its own limit would be refused anyway: nobody is closed for it.
        guard newcomerHolds < configuration.effectiveMaxConnectionsPerPeer else { return false }
        // After a swap the victim's address holds `holds - 1`, the newcomer's `newcomerHolds + 1`.
        // Under a flood of refused reconnections this runs on every accept, so the common answer,
        // no (the addresses hold as many as each other), is found from the per-address counts
        // alone, without looking at a connection.
        let mustHoldMoreThan = newcomerHolds + 1
        guard connectionsByPeer.values.contains(where: { $0 > mustHoldMoreThan }) else { return false }
        // One pass, no allocation: the waiting connection whose address holds the most, and among
        // those the one that has waited longest.
        var chosen: (connection: HTTPConnection, holds: Int, since: MonotonicInstant)?
        for connection in connections.values {
            guard let since = connection.waitingForRequestSince, let host = connection.peer?.host,
                let holds = connectionsByPeer[host], holds > mustHoldMoreThan
            else { continue }
            if let best = chosen, best.holds > holds || (best.holds == holds && best.since <= since) {
                continue
            }
            chosen = (connection, holds, since)
        }
        guard let victim = chosen?.connection else { return false }
        closedToMakeRoom += 1
        if closedToMakeRoom == 1 {
            logger.warning(
                "server full: closing waiting connections of the clients holding the most",
                ["max_connections": String(configuration.maxConnections)])
        }
        makingRoom = true
        victim.closeToMakeRoom()
        makingRoom = false
        return true
    }

    /// Sends small responses at once (`TCP_NODELAY`, tcp(7)): a response head written apart
    /// from its body would otherwise wait for the client's delayed ACK.
    private func disableNagle(_ descriptor: Int32) {
        var one: Int32 = 1
        do {
            _ = try syscall("setsockopt(TCP_NODELAY)") {
                setsockopt(
                    descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            socketCallSucceeded(.noDelay)
        } catch let error as SystemError {
            // The connection still works, only slower: serve it, and say so once.
            socketCallFailed(.noDelay, error, "serving a connection with Nagle's algorithm on")
        } catch {}
    }

    /// Serves `context`'s certificate to connections accepted from now on; open ones keep theirs.
    /// Call on the loop thread.
    public func replaceTLSContext(_ context: TLSContext) {
        assert(loop.inEventLoop)
        tlsContext = context
    }

    /// Called by a connection whose handshake finished: the first one says how records go out.
    func tlsEstablished(_ transport: TLSTransport) {
        guard !tlsModeLogged else { return }
        tlsModeLogged = true
        let negotiated = transport.negotiated
        logger.notice(
            "tls",
            [
                "ktls_send": String(transport.kernelSends), "ktls_receive": String(transport.kernelReceives),
                "protocol": negotiated.version, "cipher": negotiated.cipher,
                "files": transport.kernelSends ? "SSL_sendfile" : "pread and SSL_write",
            ])
    }

    /// Socket calls whose failures are logged once until they change.
    enum SocketCall: Hashable {
        case noDelay, unsentByteLimit, connectionInterest, acceptInterest
    }

    /// Logs `error` from `call` unless it is the failure already logged for that call.
    func socketCallFailed(_ call: SocketCall, _ error: SystemError, _ consequence: String) {
        guard loggedFailures[call] != error else { return }
        loggedFailures[call] = error
        logger.error(consequence, ["error": error.description])
    }

    /// Forgets the failure logged for `call`, so the next one is logged again.
    func socketCallSucceeded(_ call: SocketCall) {
        // Nearly always empty: a cheap test on the per-connection path.
        if !loggedFailures.isEmpty { loggedFailures[call] = nil }
    }

    /// Called by a connection once it has closed its descriptor.
    func connectionClosed(_ connection: HTTPConnection) {
        if connections.removeValue(forKey: connection.descriptor) != nil, let host = connection.peer?.host,
            let count = connectionsByPeer[host]
        {
            connectionsByPeer[host] = count > 1 ? count - 1 : nil
            if let refused = peersOverLimit.removeValue(forKey: host) {
                logger.notice(
                    "connections accepted from a client again", ["peer": host, "refused": String(refused)])
            }
        }
        if !makingRoom, refusedOverLimit != nil || closedToMakeRoom > 0,
            connections.count < configuration.maxConnections
        {
            logger.notice(
                "connections accepted again",
                ["refused": String(refusedOverLimit ?? 0), "closed_to_make_room": String(closedToMakeRoom)])
            refusedOverLimit = nil
            closedToMakeRoom = 0
        }
        resumeAccepting()
        finishShutdownIfDone()
    }

    private func pauseAccepting(_ error: SystemError) {
        if loggedAcceptFailure != error {
            loggedAcceptFailure = error
            logger.error(
                "accept failed; pausing new connections until descriptors free up",
                ["error": error.description])
        }
        acceptPausedBy = error
        do {
            for listener in listeners { try loop.modify(listener.descriptor, events: 0) }
            socketCallSucceeded(.acceptInterest)
        } catch let error as SystemError {
            // The listening socket stays watched and wakes the loop again at once; accepting
            // fails the same way until descriptors free up, which is all that can be done.
            socketCallFailed(.acceptInterest, error, "could not pause accepting")
        } catch {}
    }

    private func resumeAccepting() {
        guard acceptPausedBy != nil, !listeners.isEmpty else { return }
        do {
            for listener in listeners { try loop.modify(listener.descriptor, events: cshutter_epollin()) }
            socketCallSucceeded(.acceptInterest)
            acceptPausedBy = nil
        } catch let error as SystemError {
            // Still paused: the next tick or closed connection tries again.
            socketCallFailed(.acceptInterest, error, "could not resume accepting; retrying on the next tick")
        } catch {}
    }

    /// Enforces every deadline against `clock` now: the loop's timer runs this on every tick, and a
    /// test that advanced a `ManualClock` runs it through `loop.execute`. Call on the loop thread.
    public func checkDeadlines() {
        assert(loop.inEventLoop)
        let now = clock.monotonicNow()
        resumeAccepting()
        for connection in Array(connections.values) { connection.checkDeadlines(now: now) }
        for rejection in Array(rejected.values) where now >= rejection.deadline {
            closeRejected(rejection.descriptor)
        }
        if let deadline = shutdownDeadline, now >= deadline {
            for connection in Array(connections.values) { connection.closeNow() }
        }
        // The access log's lines wait a tick at most (see `AccessLog`).
        accessLog.flush()
    }

    private func finishShutdownIfDone() {
        guard connections.isEmpty, let completion = shutdownCompletion else { return }
        shutdownCompletion = nil
        shutdownDeadline = nil
        // Every request is answered: its lines go before the loop stops and the process exits.
        accessLog.flush()
        completion()
    }

    /// Refuses a connection from `peer`, which has `maxConnectionsPerPeer` open already, so one
    /// client cannot take every slot; logged once per episode.
    private func refuseOverPeerLimit(_ descriptor: Int32, _ peer: PeerAddress) {
        let limit = configuration.effectiveMaxConnectionsPerPeer
        if let refused = peersOverLimit[peer.host] {
            peersOverLimit[peer.host] = refused + 1
        } else {
            peersOverLimit[peer.host] = 1
            logger.warning(
                "connections refused from a client: over its limit",
                ["peer": peer.host, "max_connections_per_peer": String(limit)])
        }
        rejectOverLimit(
            descriptor, detail: "too many connections from \(peer.host) (at most \(limit)); try again later")
    }

    /// Answers 503 with `detail` on a connection that is not taken, and closes it.
    private func rejectOverLimit(_ descriptor: Int32, detail: String) {
        let body = "{\"error\":\"service unavailable\",\"detail\":\(JSONString.quote(detail))}\n"
        let response =
            "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\nRetry-After: 1\r\nConnection: close\r\n\r\n\(body)"
        // A TLS client would read a plain-text 503 as a broken handshake, and answering it in TLS
        // would cost the handshake the limit is there to refuse: it is closed at once.
        if tlsContext != nil {
            closeDescriptor(descriptor)
            return
        }
        // One try on a fresh socket whose send buffer is empty; no waiting. If it fails (the
        // client reset already) or would block, there is no answer to protect: close at once.
        var sent = false
        do {
            let bytes = Array(response.utf8)
            let result = try bytes.withUnsafeBytes { raw in
                try nonBlockingSyscall("send") {
                    Glibc.send(descriptor, raw.baseAddress, raw.count, Int32(MSG_NOSIGNAL))
                }
            }
            if case .processed = result { sent = true }
        } catch {
            sent = false
        }
        // Closing with the client's request unread would make the kernel answer with a
        // reset that can destroy the 503 in flight: half-close and drain for a moment
        // instead, but never hold more than a few such sockets.
        guard sent, rejected.count < 64 else {
            closeDescriptor(descriptor)
            return
        }
        do {
            _ = try syscall("shutdown(SHUT_WR)") { Glibc.shutdown(descriptor, Int32(SHUT_WR)) }
        } catch {
            // ENOTCONN: the client is gone; nothing left to drain.
            closeDescriptor(descriptor)
            return
        }
        let rejection = RejectedConnection(
            descriptor: descriptor, deadline: clock.monotonicNow().advanced(by: 1_000_000_000),
            onFinished: { [unowned self] in self.closeRejected(descriptor) })
        do {
            try loop.register(
                descriptor, events: cshutter_epollin() | cshutter_epollrdhup(), handler: rejection)
            rejected[descriptor] = rejection
        } catch {
            closeDescriptor(descriptor)
        }
    }

    private func closeRejected(_ descriptor: Int32) {
        guard rejected.removeValue(forKey: descriptor) != nil else { return }
        loop.deregister(descriptor)
        closeDescriptor(descriptor)
    }
}

/// A refused connection being drained until the client closes or its deadline passes.
private final class RejectedConnection: EventLoopHandler {
    let descriptor: Int32
    let deadline: MonotonicInstant
    let onFinished: () -> Void

    init(descriptor: Int32, deadline: MonotonicInstant, onFinished: @escaping () -> Void) {
        self.descriptor = descriptor
        self.deadline = deadline
        self.onFinished = onFinished
    }

    func handleEvents(_ events: UInt32) {
        var scratch = [UInt8](repeating: 0, count: 4096)
        do {
            let result = try scratch.withUnsafeMutableBytes { buffer in
                try nonBlockingSyscall("read") { Glibc.read(descriptor, buffer.baseAddress, buffer.count) }
            }
            // The client closed: the 503 has reached it or never will.
            if case .processed(0) = result { onFinished() }
        } catch {
            // A reset: nothing more to drain.
            onFinished()
        }
    }
}
