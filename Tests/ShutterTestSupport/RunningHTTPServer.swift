import ShutterHTTP
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// An `HTTPServer` on 127.0.0.1 and a free port, its loop on its own thread, for tests
/// that want real sockets without the whole daemon.
public final class RunningHTTPServer: @unchecked Sendable {
    // @unchecked Sendable: `server` is only touched on the loop thread after start.
    public let loop: EventLoop
    public let server: HTTPServer
    private let thread: OSThread
    public let port: Int

    public init(router: Router, configure: (inout HTTPServerConfiguration) -> Void = { _ in }) throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.logRequests = false
        configure(&configuration)
        loop = try EventLoop(tickMilliseconds: 50)
        server = HTTPServer(
            configuration: configuration, router: router, logger: Logger(label: "test", level: .error),
            loop: loop)
        try server.start()
        port = server.boundPort
        let loop = self.loop
        thread = try OSThread.spawn(name: "test-loop") { loop.run() }
    }

    /// Shuts the server down gracefully and waits for the loop thread.
    public func stop() {
        let server = self.server
        let loop = self.loop
        loop.execute { server.shutdown { loop.stop() } }
        thread.join()
    }
}

/// A blocking TCP client on 127.0.0.1 for tests: send bytes, read responses.
public final class TestSocket {
    public let descriptor: Int32

    public init(port: Int, receiveBuffer: Int32? = nil, timeoutSeconds: Int = 5) throws {
        descriptor = try syscall("socket") { socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0) }
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
            _ = try OSThread.spawn(name: "test-blocking") {
                continuation.resume(with: Result { try body() })
            }
        } catch {
            continuation.resume(throwing: error)
        }
    }
}
