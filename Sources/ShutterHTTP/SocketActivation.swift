import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The listening sockets systemd passed (sd_listen_fds(3)): `$LISTEN_FDS` descriptors from 3,
/// for this process (`$LISTEN_PID`). With them, the daemon listens where the `.socket` unit
/// says (TCP or unix) instead of on its `listen` addresses.
public struct SocketActivation: Sendable {
    /// The descriptors, from 3 up.
    public let descriptors: [Int32]
    /// What each is bound to, in the same order.
    public let addresses: [ListenAddress]

    /// The sockets `environment` names for process `pid`, or nil when it names none.
    public init?(environment: [String: String], pid: Int32 = getpid()) throws {
        guard let count = environment["LISTEN_FDS"].flatMap({ Int($0) }), count > 0,
            environment["LISTEN_PID"].flatMap({ Int32($0) }) == pid
        else { return nil }
        guard count <= 64 else { throw SystemError(errno: EMFILE, call: "LISTEN_FDS=\(count)") }
        descriptors = (0..<Int32(count)).map { 3 + $0 }
        addresses = try descriptors.map(Self.address(of:))
    }

    /// What the listening socket `descriptor` is bound to.
    static func address(of descriptor: Int32) throws -> ListenAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutableBytes(of: &storage) { raw in
            try syscall("getsockname of LISTEN_FDS socket \(descriptor)") {
                getsockname(descriptor, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
            }
        }
        if Int32(storage.ss_family) == AF_UNIX {
            let path = withUnsafeBytes(of: storage) { raw -> String in
                String(
                    decoding: raw.dropFirst(MemoryLayout<sa_family_t>.size).prefix { $0 != 0 }, as: UTF8.self)
            }
            return .unix(path: path)
        }
        guard let peer = PeerAddress(storage: storage) else {
            throw SystemError(errno: EAFNOSUPPORT, call: "LISTEN_FDS socket \(descriptor) is not TCP or unix")
        }
        let port = try SocketAddress.localPort(of: descriptor)
        return .tcp(host: peer.host.contains(":") ? "[\(peer.host)]" : peer.host, port: port)
    }
}
