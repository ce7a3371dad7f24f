import ShutterHTTP
import ShutterSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// An `HTTPServer` on 127.0.0.1 and a free port, its loop on its own thread, for tests
/// that want real sockets without the whole daemon.
///
/// Its timeouts run on `clock`, a `ManualClock`: nothing times out unless the test calls
/// `advance(by:)`, which moves the clock and runs the deadline checks on the loop.
public final class RunningHTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `server` is only touched on the loop thread after start.
    public let loop: EventLoop
    public let server: HTTPServer
    /// The clock every server timeout is decided on.
    public let clock: ManualClock
    private let thread: OSThread
    private let shutDown = ThreadWakeup()
    private let shutdownStarted = Atomic<Bool>(false)
    public let port: Int

    /// A server for `router`, speaking TLS with `tls` when given; `logLevel` is what `logSink`
    /// records from (errors only unless told).
    public init(
        router: Router, clock: ManualClock = ManualClock(), logSink: (any Logger.Sink)? = nil,
        logLevel: Logger.Level = .error, tls: TLSContext? = nil,
        configure: (inout HTTPServerConfiguration) -> Void = { _ in }
    ) throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.logRequests = false
        configure(&configuration)
        self.clock = clock
        // Deadlines are checked when the test advances the clock, not by the loop's own timer,
        // whose real-time ticks would run checks between the test's steps (and sample SIOCOUTQ).
        loop = try EventLoop(tickMilliseconds: 3_600_000)
        server = HTTPServer(
            configuration: configuration, router: router,
            logger: logSink.map { Logger(label: "test", level: logLevel, sink: $0) }
                ?? Logger(label: "test", level: .error),
            loop: loop, clock: clock, tls: tls)
        try server.start()
        port = server.boundPort
        let loop = self.loop
        thread = try OSThread.spawn(name: "test-loop") { loop.run() }
    }

    /// Runs `body` on the loop thread and returns its result once it has run.
    ///
    /// Everything the loop was doing when this was called (the event it was handling) is done
    /// by then, so this also serves as "the server has caught up".
    @discardableResult
    public func onLoop<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = LockedValue<T?>(nil)
        let done = ThreadWakeup()
        loop.execute {
            let value = body()
            result.withLock { $0 = value }
            done.signal()
        }
        // No time limit here: the loop runs queued work promptly unless the server is broken,
        // and the HTTP suites' time limit fails a test that hangs.
        _ = done.wait(untilMonotonic: nil)
        return result.withLock { $0! }
    }

    /// Moves the clock forward and runs the server's deadline checks on the loop, then returns.
    public func advance(byMilliseconds milliseconds: Int) {
        clock.advance(by: UInt64(milliseconds) * 1_000_000)
        let server = self.server
        onLoop { server.checkDeadlines() }
    }

    /// The server's open connections, read on the loop thread that owns them.
    public var connectionCount: Int {
        let server = self.server
        return onLoop { server.connectionCount }
    }

    /// Starts a graceful shutdown and returns without waiting for it.
    public func beginShutdown() {
        guard !shutdownStarted.exchange(true, ordering: .relaxed) else { return }
        let server = self.server
        let loop = self.loop
        let shutDown = self.shutDown
        loop.execute {
            server.shutdown {
                shutDown.signal()
                loop.stop()
            }
        }
    }

    /// Blocks until the shutdown has completed; false if `seconds` pass first (a safety limit for
    /// a shutdown that is held, which is what a test of it checks).
    public func waitForShutdown(seconds: Int = 5) -> Bool {
        shutDown.wait(
            untilMonotonic: SystemClock().monotonicNow().advanced(by: UInt64(seconds) * 1_000_000_000))
    }

    /// Shuts the server down and waits for the loop thread.
    ///
    /// A client still connected (in a lingering close, or owed a response) would hold a graceful
    /// shutdown until the grace period ends, which on the virtual clock is never: after starting
    /// the shutdown this moves the clock past the grace, so the server closes what is left. A test
    /// of the shutdown itself waits for it with `waitForShutdown` before calling this.
    public func stop() {
        beginShutdown()
        let server = self.server
        let clock = self.clock
        // Queued after the shutdown, so the grace's deadline is already set when the clock moves.
        // Not waited for: the loop may have stopped already, and then it never runs but stays in
        // the loop's queue; holding the server weakly, it makes no cycle (server -> loop -> this
        // task -> server) that would outlive the test (LeakSanitizer saw one per such test).
        loop.execute { [weak server] in
            guard let server else { return }
            clock.advance(by: UInt64(server.configuration.shutdownGraceMilliseconds + 1) * 1_000_000)
            server.checkDeadlines()
        }
        thread.join()
    }
}

/// A blocking TCP client on 127.0.0.1 for tests: send bytes, read responses.
public final class TestSocket {
    public let descriptor: Int32

    /// A client connected to 127.0.0.1:`port`, from `source` (another 127.x.y.z address, in
    /// host byte order, to be another client) if given.
    public init(port: Int, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 5, source: UInt32? = nil) throws
    {
        descriptor = try syscall("socket") { socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = source.bigEndian
            _ = try withUnsafePointer(to: &local) { pointer in
                try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                    try syscall("bind") { bind(descriptor, sa, socklen_t(MemoryLayout<sockaddr_in>.size)) }
                }
            }
        }
        if var size = receiveBuffer {
            setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var timeout = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = UInt32(0x7F00_0001).bigEndian
        _ = try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                try syscall("connect") { connect(descriptor, sa, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
        }
    }

    deinit { closeDescriptor(descriptor) }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    public func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let n = try bytes.withUnsafeBytes { raw in
                try syscall("send") {
                    Glibc.send(descriptor, raw.baseAddress! + offset, raw.count - offset, Int32(MSG_NOSIGNAL))
                }
            }
            offset += n
        }
    }

    /// Reads until the peer closes (or the timeout passes) and returns everything.
    public func readToEnd() -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return result }
            result += buffer[0..<n]
        }
    }

    /// Reads until the peer closes and returns what came before; nil if the receive timeout passes
    /// first (so a test can tell a server that closed from one that did nothing).
    public func readUntilClosed() -> [UInt8]? {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buffer.withUnsafeMutableBytes { Glibc.recv(descriptor, $0.baseAddress, $0.count, 0) }
            if n == 0 { return result }
            if n < 0 { return errno == EAGAIN || errno == EWOULDBLOCK ? nil : result }
            result += buffer[0..<n]
        }
    }

    /// The local port of this client's socket (to find the server's end of the connection).
    public var localPort: Int { Self.port(of: descriptor, peer: false) }

    /// The local (or, with `peer`, the remote) port of an IPv4 socket; 0 if it has none.
    public static func port(of descriptor: Int32, peer: Bool) -> Int {
        var address = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let result = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { sa in
                peer ? getpeername(descriptor, sa, &length) : getsockname(descriptor, sa, &length)
            }
        }
        guard result == 0, address.sin_family == sa_family_t(AF_INET) else { return 0 }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    /// Reads exactly `count` bytes, or fewer if the peer closes first.
    public func read(count: Int) -> [UInt8] {
        var result: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        while result.count < count {
            let n = buffer.withUnsafeMutableBytes {
                Glibc.recv(descriptor, $0.baseAddress, min($0.count, count - result.count), 0)
            }
            if n <= 0 { break }
            result += buffer[0..<n]
        }
        return result
    }

    /// Reads a head (a response's, or a multipart part's), up to and including its blank line;
    /// nil if the peer closes first.
    public func readHead() -> String? {
        var head: [UInt8] = []
        while !head.ends(with: [13, 10, 13, 10]) {
            let byte = read(count: 1)
            if byte.isEmpty { return nil }
            head += byte
        }
        return String(decoding: head, as: UTF8.self)
    }

    /// Reads one response framed by Content-Length; returns (status, head text, body).
    public func readResponse() -> (status: Int, head: String, body: [UInt8])? {
        guard let text = readHead() else { return nil }
        let status = Int(text.split(separator: " ")[1]) ?? 0
        var length = 0
        for line in text.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
            length = Int(line.split(separator: ":")[1].trimmingSpaces()) ?? 0
        }
        return (status, text, read(count: length))
    }
}

extension Array where Element == UInt8 {
    fileprivate func ends(with suffix: [UInt8]) -> Bool {
        count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix
    }
}

/// Runs blocking test code (sockets, joins) on its own OS thread.
///
/// Swift Testing runs tests on the cooperative pool, which has one thread per core:
/// a test blocked in `recv` there can starve the very task handler it waits for.
public func onDedicatedThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        do {
            // Detached: nobody joins it, and it ends right after resuming the test.
            try OSThread.spawn(name: "test-blocking") {
                continuation.resume(with: Result { try body() })
            }.detach()
        } catch {
            continuation.resume(throwing: error)
        }
    }
}
