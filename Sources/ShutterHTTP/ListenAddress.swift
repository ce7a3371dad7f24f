/// Where the server listens: a TCP address, or a unix socket path.
public enum ListenAddress: Sendable, Equatable, CustomStringConvertible {
    /// A numeric IPv4 address or an IPv6 one in brackets, and a port (0: any free one).
    case tcp(host: String, port: Int)
    /// A unix socket at `path`, created with mode 0660 and removed on exit.
    case unix(path: String)

    /// `HOST:PORT`, `[IPv6]:PORT` or `unix:/path`; nil if it is none of them.
    public init?(_ text: some StringProtocol) {
        if text.hasPrefix("unix:") {
            let path = String(text.dropFirst("unix:".count))
            // sun_path holds 108 bytes with its NUL (unix(7)); a relative path would depend on
            // the working directory.
            guard path.hasPrefix("/"), path.utf8.count < 108, !path.contains("\0") else { return nil }
            self = .unix(path: path)
            return
        }
        guard let colon = text.lastIndex(of: ":"), colon != text.startIndex,
            let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port)
        else { return nil }
        self = .tcp(host: String(text[..<colon]), port: port)
    }

    public var description: String {
        switch self {
        case .tcp(let host, let port): "\(host):\(port)"
        case .unix(let path): "unix:\(path)"
        }
    }

    /// Whether only this machine can reach it: a loopback address (127.0.0.0/8, ::1) or a unix
    /// socket (whose file mode decides who).
    public var isLoopback: Bool {
        switch self {
        case .unix: return true
        case .tcp(let host, _):
            let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
            if bare == "::1" || bare == "0:0:0:0:0:0:0:1" { return true }
            let parts = bare.split(separator: ".")
            return parts.count == 4 && parts[0] == "127"
        }
    }
}
