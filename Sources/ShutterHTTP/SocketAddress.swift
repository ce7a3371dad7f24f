import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// An IPv4 or IPv6 socket address parsed from a numeric host and a port.
struct SocketAddress {
    private var storage = sockaddr_storage()
    let family: Int32

    init(host: String, port: Int) throws {
        guard (0...65535).contains(port) else { throw SystemError(errno: EINVAL, call: "port \(port)") }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        var v4 = sockaddr_in()
        if inet_pton(AF_INET, bare, &v4.sin_addr) == 1 {
            v4.sin_family = sa_family_t(AF_INET)
            v4.sin_port = in_port_t(UInt16(port).bigEndian)
            family = AF_INET
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: v4) { raw.copyMemory(from: $0) }
            }
            return
        }
        var v6 = sockaddr_in6()
        if inet_pton(AF_INET6, bare, &v6.sin6_addr) == 1 {
            v6.sin6_family = sa_family_t(AF_INET6)
            v6.sin6_port = in_port_t(UInt16(port).bigEndian)
            family = AF_INET6
            withUnsafeMutableBytes(of: &storage) { raw in
                withUnsafeBytes(of: v6) { raw.copyMemory(from: $0) }
            }
            return
        }
        throw SystemError(
            errno: EINVAL, call: "parse listen address '\(host)' (use a numeric IPv4 or IPv6 address)")
    }

    func withSockAddr<T>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> T) rethrows -> T {
        let length = family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size
        return try withUnsafeBytes(of: storage) { raw in
            try body(raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), socklen_t(length))
        }
    }

    /// The local port a bound socket ended up with.
    static func localPort(of descriptor: Int32) throws -> Int {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try withUnsafeMutableBytes(of: &storage) { raw in
            try syscall("getsockname") {
                getsockname(descriptor, raw.baseAddress!.assumingMemoryBound(to: sockaddr.self), &length)
            }
        }
        return withUnsafeBytes(of: storage) { raw in
            if Int32(raw.load(as: sockaddr.self).sa_family) == AF_INET {
                return Int(UInt16(bigEndian: raw.load(as: sockaddr_in.self).sin_port))
            }
            return Int(UInt16(bigEndian: raw.load(as: sockaddr_in6.self).sin6_port))
        }
    }
}
