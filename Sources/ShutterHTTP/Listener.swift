import CShutterLinux
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// One listening socket of the server: a TCP address, a unix socket, or one systemd passed.
///
/// Owned by the server's loop thread; its events ask the server to accept.
final class Listener: EventLoopHandler {
    let descriptor: Int32
    /// As the logs and `boundAddresses` show it: `127.0.0.1:8080` or `unix:/run/shutterd.sock`.
    let name: String
    let isUnix: Bool
    /// The TCP port bound (0 for a unix socket).
    let port: Int
    /// The socket file this listener made, removed when it closes (never one systemd made).
    private let createdPath: String?
    private unowned let server: HTTPServer

    private init(
        descriptor: Int32, name: String, isUnix: Bool, port: Int, createdPath: String?, server: HTTPServer
    ) {
        self.descriptor = descriptor
        self.name = name
        self.isUnix = isUnix
        self.port = port
        self.createdPath = createdPath
        self.server = server
    }

    func handleEvents(_ events: UInt32) {
        server.acceptPending(on: self)
    }

    /// Stops watching and closes the socket; removes the socket file it made.
    func close(loop: EventLoop) {
        loop.deregister(descriptor)
        closeDescriptor(descriptor)
        if let createdPath { unlink(createdPath) }
    }

    /// A new listening socket at `address`.
    static func bind(_ address: ListenAddress, server: HTTPServer) throws -> Listener {
        switch address {
        case .tcp(let host, let port): return try bindTCP(host: host, port: port, server: server)
        case .unix(let path): return try bindUnix(path: path, server: server)
        }
    }

    private static func bindTCP(host: String, port: Int, server: HTTPServer) throws -> Listener {
        let address = try SocketAddress(host: host, port: port)
        let descriptor = try syscall("socket") {
            socket(
                address.family,
                Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            var one: Int32 = 1
            _ = try syscall("setsockopt(SO_REUSEADDR)") {
                setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
            }
            _ = try address.withSockAddr { pointer, length in
                try syscall("bind \(host):\(port)") { Glibc.bind(descriptor, pointer, length) }
            }
            _ = try syscall("listen") { listen(descriptor, 1024) }
            let bound = try SocketAddress.localPort(of: descriptor)
            return Listener(
                descriptor: descriptor, name: "\(host):\(bound)", isUnix: false, port: bound,
                createdPath: nil,
                server: server)
        } catch {
            closeDescriptor(descriptor)
            throw error
        }
    }

    /// A unix socket at `path`, mode 0660. A stale socket file (nobody accepts on it) is
    /// replaced; one another process serves is refused, and so is a file that is not a socket.
    private static func bindUnix(path: String, server: HTTPServer) throws -> Listener {
        var info = stat()
        if lstat(path, &info) == 0 {
            guard info.st_mode & S_IFMT == S_IFSOCK else {
                throw SystemError(errno: EEXIST, call: "listen on \(path): it exists and is not a socket")
            }
            if isServed(path) {
                throw SystemError(errno: EADDRINUSE, call: "listen on \(path): another process serves it")
            }
            unlink(path)
        }
        let descriptor = try syscall("socket(AF_UNIX)") {
            socket(
                AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue),
                0)
        }
        var made = false
        do {
            _ = try withUnixAddress(path) { pointer, length in
                try syscall("bind \(path)") { Glibc.bind(descriptor, pointer, length) }
            }
            made = true
            // Owner and group (the operator's `video`-like group, say) may connect; others not.
            _ = try syscall("chmod \(path)") { chmod(path, 0o660) }
            _ = try syscall("listen") { listen(descriptor, 1024) }
            return Listener(
                descriptor: descriptor, name: "unix:\(path)", isUnix: true, port: 0, createdPath: path,
                server: server)
        } catch {
            closeDescriptor(descriptor)
            if made { unlink(path) }
            throw error
        }
    }

    /// Whether a process accepts connections on the unix socket at `path`.
    private static func isServed(_ path: String) -> Bool {
        let probe = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard probe >= 0 else { return false }
        defer { closeDescriptor(probe) }
        let connected =
            (try? withUnixAddress(path) { pointer, length in connect(probe, pointer, length) }) ?? -1
        return connected == 0
    }

    private static func withUnixAddress<T>(
        _ path: String, _ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T
    ) throws -> T {
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        guard bytes.count < MemoryLayout.size(ofValue: address.sun_path) else {
            throw SystemError(errno: ENAMETOOLONG, call: "unix socket path \(path)")
        }
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: bytes) }
        let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + 1)
        return try withUnsafePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { try body($0, length) }
        }
    }

    /// A listening socket systemd passed (socket activation), made non-blocking.
    static func adopt(_ descriptor: Int32, server: HTTPServer) throws -> Listener {
        let flags = try syscall("fcntl(F_GETFL)") { fcntl(descriptor, F_GETFL) }
        _ = try syscall("fcntl(F_SETFL)") { fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) }
        _ = try syscall("fcntl(F_SETFD)") { fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
        switch try SocketActivation.address(of: descriptor) {
        case .unix(let path):
            return Listener(
                descriptor: descriptor, name: "unix:\(path)", isUnix: true, port: 0, createdPath: nil,
                server: server)
        case .tcp(let host, let port):
            return Listener(
                descriptor: descriptor, name: "\(host):\(port)", isUnix: false, port: port, createdPath: nil,
                server: server)
        }
    }
}
