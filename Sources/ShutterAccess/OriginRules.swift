import ShutterHTTP
import ShutterSystem

/// The browser defences, which hold on loopback too: which `Host` names are ours (DNS
/// rebinding), which origins may change state (cross-site requests), and CORS.
public struct OriginRules: Sendable {
    /// Names besides IP literals and `localhost` that `Host` may carry, lowercased.
    let allowedHosts: Set<String>
    /// Origins (`scheme://host[:port]`, lowercased) allowed cross-origin access.
    let corsOrigins: Set<String>

    /// Rules allowing `allowedHosts` as `Host` and `corsOrigins` cross-origin access.
    public init(allowedHosts: [String] = [], corsOrigins: [String] = []) throws(AccessConfigurationError) {
        var hosts: Set<String> = []
        for host in allowedHosts {
            let name = Self.normalizedName(host)
            guard !name.isEmpty, name.utf8.allSatisfy(Self.isNameByte) else {
                throw AccessConfigurationError("allowed_hosts: '\(host)' is not a host name")
            }
            hosts.insert(name)
        }
        var origins: Set<String> = []
        for origin in corsOrigins {
            let lowered = origin.lowercased()
            guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://"),
                !lowered.dropFirst(lowered.hasPrefix("https") ? 8 : 7).contains("/"),
                lowered.count > 8, !lowered.contains("*")
            else {
                throw AccessConfigurationError(
                    "cors_origins: '\(origin)' is not an origin such as https://example.com or http://host:8080"
                )
            }
            origins.insert(lowered)
        }
        self.allowedHosts = hosts
        self.corsOrigins = origins
    }

    // MARK: Host

    /// Whether the `Host` header names this daemon: an IP literal (a rebinding page can only
    /// use a name), `localhost` or a name under it (browsers resolve those to loopback without
    /// DNS, RFC 6761 §6.3), or a name in `allowed_hosts`. HTTP/1.0 may omit it.
    func isAllowedHost(_ host: String?) -> Bool {
        guard let host else { return true }
        // Every request asks this, nearly always with an IP literal: answered from the bytes,
        // without building a single string (it was 3% of a media request's CPU).
        if Self.isIPv4Authority(host.utf8) || Self.isLocalhostAuthority(host.utf8) { return true }
        let name = Self.hostName(ofAuthority: host)
        if name.isEmpty { return false }
        if name.hasPrefix("[") { return name.hasSuffix("]") }
        if Self.isIPv4Literal(name) { return true }
        if name == "localhost" || name.hasSuffix(".localhost") { return true }
        return allowedHosts.contains(name)
    }

    // MARK: Origin

    /// Why a request that changes state is refused as cross-site, or nil if it may go on.
    ///
    /// curl and scripts send neither `Origin` nor `Sec-Fetch-Site`, so they are never refused;
    /// a browser sends `Origin` with every such request.
    func crossSiteRefusal(_ request: HTTPRequest) -> String? {
        if request.method == .get || request.method == .head || request.method == .options { return nil }
        let origin = request.headers["Origin"]
        if let origin {
            let lowered = origin.lowercased()
            if corsOrigins.contains(lowered) { return nil }
            if lowered == "null" {
                return "a request from an opaque origin (Origin: null) may not change state"
            }
            guard let authority = Self.authority(ofOrigin: lowered),
                let host = request.headers["Host"], authority == host.lowercased()
            else {
                return
                    "origin \(origin.prefix(100)) may not change state here; list it in cors_origins to allow it"
            }
            return nil
        }
        if let site = request.headers["Sec-Fetch-Site"], site.caseInsensitiveEquals("cross-site") {
            return "a cross-site request may not change state"
        }
        return nil
    }

    // MARK: CORS

    /// The CORS headers for a request from `origin`, if it is allowed (empty otherwise).
    func corsHeaders(origin: String?) -> HTTPHeaders {
        guard let origin, corsOrigins.contains(origin.lowercased()) else { return [:] }
        var headers: HTTPHeaders = [:]
        headers.add(name: "Access-Control-Allow-Origin", value: origin)
        headers.add(name: "Access-Control-Allow-Credentials", value: "true")
        headers.add(
            name: "Access-Control-Expose-Headers",
            value: "Location, ETag, Last-Modified, Retry-After, Server-Timing, X-Request-Id, Content-Range")
        headers.add(name: "Vary", value: "Origin")
        return headers
    }

    /// The answer to a CORS preflight (`OPTIONS` with `Access-Control-Request-Method`), or nil
    /// if `request` is not one. Preflights carry no credentials, so this comes before access control.
    func preflightResponse(_ request: HTTPRequest, route: RouteMatch) -> HTTPResponse? {
        guard request.method == .options,
            let requestedMethod = request.headers["Access-Control-Request-Method"]
        else { return nil }
        let origin = request.headers["Origin"]
        guard let origin, corsOrigins.contains(origin.lowercased()) else {
            return HTTPError(
                .forbidden, "cross-origin request refused",
                detail: "origin \((origin ?? "(none)").prefix(100)) is not in cors_origins"
            ).response()
        }
        let allowed: [HTTPMethod]
        switch route {
        case .notFound:
            return HTTPError(.notFound, detail: "no resource at this path").response()
        case .methodNotAllowed(let methods): allowed = methods
        case .handler: allowed = [.options]
        }
        guard allowed.contains(where: { $0.rawValue == requestedMethod }) else {
            return HTTPError(
                .forbidden, "cross-origin request refused",
                detail: "\(requestedMethod.prefix(20)) is not allowed here; allowed: "
                    + allowed.map(\.rawValue).joined(separator: ", ")
            ).response()
        }
        var headers = corsHeaders(origin: origin)
        headers.add(
            name: "Access-Control-Allow-Methods", value: allowed.map(\.rawValue).joined(separator: ", "))
        headers.add(
            name: "Access-Control-Allow-Headers",
            value:
                "Authorization, Content-Type, If-None-Match, If-Match, If-Modified-Since, Range, Last-Event-ID"
        )
        headers.add(name: "Access-Control-Max-Age", value: "600")
        return HTTPResponse(status: .noContent, headers: headers)
    }

    // MARK: Parsing

    /// The host of an authority (`name:port`, `[v6]:port`), lowercased, without a trailing dot.
    static func hostName(ofAuthority authority: String) -> String {
        let lowered = authority.lowercased()
        if lowered.hasPrefix("[") {
            guard let close = lowered.firstIndex(of: "]") else { return "" }
            return String(lowered[...close])
        }
        let name = lowered.splitASCII(UInt8(ascii: ":"), maxSplits: 1, omittingEmptySubsequences: false)[0]
        return normalizedName(String(name))
    }

    /// `host[:port]` of a serialized origin (`scheme://host[:port]`), or nil.
    static func authority(ofOrigin origin: String) -> String? {
        for scheme in ["http://", "https://"] where origin.hasPrefix(scheme) {
            let authority = origin.dropFirst(scheme.count)
            return authority.isEmpty || authority.contains("/") ? nil : String(authority)
        }
        return nil
    }

    private static func normalizedName(_ name: String) -> String {
        var name = name.lowercased()
        if name.hasSuffix(".") { name.removeLast() }
        return name
    }

    /// Whether `authority` is `a.b.c.d` or `a.b.c.d:port`, each part 0 to 255 and the port digits.
    /// Whether `authority` is `localhost` or `localhost:port` in any case: what a browser on this
    /// machine sends, answered from the bytes like an IP literal.
    static func isLocalhostAuthority(_ authority: String.UTF8View) -> Bool {
        var index = authority.startIndex
        for expected in "localhost".utf8 {
            guard index != authority.endIndex, authority[index] | 0x20 == expected else { return false }
            index = authority.index(after: index)
        }
        guard index != authority.endIndex else { return true }
        guard authority[index] == UInt8(ascii: ":") else { return false }
        let port = authority[authority.index(after: index)...]
        return (1...5).contains(port.count) && port.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    static func isIPv4Authority(_ authority: String.UTF8View) -> Bool {
        var parts = 0
        var digits = 0
        var value = 0
        var inPort = false
        for byte in authority {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                digits += 1
                if !inPort {
                    value = value * 10 + Int(byte - UInt8(ascii: "0"))
                    guard digits <= 3, value <= 255 else { return false }
                } else if digits > 5 {
                    return false
                }
            case UInt8(ascii: ".") where !inPort:
                guard digits > 0, parts < 3 else { return false }
                parts += 1
                digits = 0
                value = 0
            case UInt8(ascii: ":") where !inPort:
                guard digits > 0, parts == 3 else { return false }
                inPort = true
                digits = 0
            default:
                return false
            }
        }
        return digits > 0 && parts == 3
    }

    private static func isIPv4Literal(_ name: String) -> Bool {
        let parts = name.splitASCII(UInt8(ascii: "."), omittingEmptySubsequences: false)
        return parts.count == 4
            && parts.allSatisfy { part in
                !part.isEmpty && part.utf8.count <= 3 && part.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
                    && Int(part)! <= 255
            }
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E
    }
}
