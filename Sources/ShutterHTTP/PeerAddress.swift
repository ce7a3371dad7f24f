#if canImport(Glibc)
    import Glibc
#endif

/// The address a connection came from: what per-client limits and the logs key on.
///
/// Only the host is kept: a client opening many connections uses many ports, and every limit
/// that counts a client's connections or failed logins must see them as one.
public struct PeerAddress: Hashable, Sendable, CustomStringConvertible {
    /// The numeric address, `127.0.0.1` or `::1`; an IPv4-mapped IPv6 address is shown as IPv4.
    public let host: String
    /// Whether the address is loopback (127.0.0.0/8 or ::1).
    public let isLoopback: Bool

    public init(host: String, isLoopback: Bool) {
        self.host = host
        self.isLoopback = isLoopback
    }

    public var description: String { host }

    /// A client of a unix socket: on this machine, as the socket file's mode allowed.
    public static let unixSocket = PeerAddress(host: "unix", isLoopback: true)

    /// The address in `storage` as filled by `accept4`, or nil for a family other than IP.
    init?(storage: sockaddr_storage) {
        var storage = storage
        let family = Int32(storage.ss_family)
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        if family == AF_INET {
            let v4 = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            var address = v4.sin_addr
            guard inet_ntop(AF_INET, &address, &text, socklen_t(text.count)) != nil else { return nil }
            host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
            isLoopback = UInt32(bigEndian: address.s_addr) >> 24 == 127
            return
        }
        guard family == AF_INET6 else { return nil }
        let v6 = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
        let bytes = withUnsafeBytes(of: v6.sin6_addr) { Array($0) }
        // ::ffff:a.b.c.d is an IPv4 client on a dual-stack socket: one client, one key.
        if bytes[0..<10].allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF {
            host = bytes[12...].map(String.init).joined(separator: ".")
            isLoopback = bytes[12] == 127
            return
        }
        var address = v6.sin6_addr
        guard inet_ntop(AF_INET6, &address, &text, socklen_t(text.count)) != nil else { return nil }
        host = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        isLoopback = bytes[0..<15].allSatisfy { $0 == 0 } && bytes[15] == 1
    }
}
