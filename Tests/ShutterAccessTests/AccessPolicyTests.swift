import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterAccess

@Suite struct AccessPolicyTests {
    static let viewToken = "viewer-token-0123456789"
    static let snapToken = "snapper-token-0123456789"
    static let adminToken = "admin-token-0123456789"
    let clock = ManualClock()
    let log = RecordingLogSink()

    private func policy(
        anonymous: AccessScope = .none, tokens: Bool = true, allowedHosts: [String] = [],
        corsOrigins: [String] = [], maximumFailures: Int = 10
    ) throws -> AccessPolicy {
        let tokens =
            tokens
            ? try AccessTokens.parse(
                "view \(Self.viewToken)\nsnap \(Self.snapToken)\nadmin \(Self.adminToken)", source: "t")
            : .none
        return AccessPolicy(
            settings: AccessPolicy.Settings(
                tokens: tokens, anonymous: anonymous,
                origins: try OriginRules(allowedHosts: allowedHosts, corsOrigins: corsOrigins),
                links: SignedLinks(key: Array(repeating: 1, count: 32))),
            throttle: LoginThrottle.Limits(maximumFailures: maximumFailures), clock: clock,
            logger: Logger(label: "test", level: .info, sink: log))
    }

    private func request(
        _ method: HTTPMethod = .get, _ target: String = "/library",
        headers: HTTPHeaders = ["Host": "127.0.0.1:8080"],
        peer: String = "192.0.2.7"
    ) -> HTTPRequest {
        HTTPRequest(
            method: method, target: target, headers: headers, peer: PeerAddress(host: peer, isLoopback: false)
        )
    }

    private func status(_ decision: HTTPPolicyDecision) -> Int {
        switch decision {
        case .proceed: 200
        case .respond(let response, _): response.status.code
        }
    }

    private func with(_ headers: HTTPHeaders, host: String = "127.0.0.1:8080") -> HTTPHeaders {
        var all: HTTPHeaders = ["Host": host]
        for (name, value) in headers { all.add(name: name, value: value) }
        return all
    }

    @Test func eachScopeReachesWhatItIncludesAndNoMore() throws {
        let policy = try policy()
        let cases: [(token: String?, required: AccessScope, expected: Int)] = [
            (nil, .none, 200), (nil, .view, 401), (nil, .snap, 401), (nil, .admin, 401),
            (Self.viewToken, .view, 200), (Self.viewToken, .snap, 403), (Self.viewToken, .admin, 403),
            (Self.snapToken, .view, 200), (Self.snapToken, .snap, 200), (Self.snapToken, .admin, 403),
            (Self.adminToken, .view, 200), (Self.adminToken, .snap, 200), (Self.adminToken, .admin, 200),
        ]
        for (token, required, expected) in cases {
            let headers = with(token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
            let decision = policy.evaluate(
                request(.post, headers: headers), path: "/x", route: .handler(scope: required))
            #expect(status(decision) == expected, "token \(token ?? "none") for \(required)")
        }
    }

    @Test func unauthorizedNamesBothSchemesAndForbiddenNamesTheScope() throws {
        let policy = try policy()
        guard
            case .respond(let unauthorized, _) = policy.evaluate(
                request(), path: "/library", route: .handler(scope: .view))
        else { return #expect(Bool(false)) }
        #expect(unauthorized.status.code == 401)
        #expect(unauthorized.headers.values("WWW-Authenticate").count == 2)
        #expect(unauthorized.headers.values("WWW-Authenticate").contains { $0.hasPrefix("Basic ") })
        #expect(unauthorized.headers.values("WWW-Authenticate").contains { $0.hasPrefix("Bearer ") })
        let viewer = with(["Authorization": "Bearer \(Self.viewToken)"])
        guard
            case .respond(let forbidden, _) = policy.evaluate(
                request(.delete, "/library/3", headers: viewer), path: "/library/3",
                route: .handler(scope: .admin))
        else { return #expect(Bool(false)) }
        #expect(forbidden.status.code == 403)
        #expect(String(decoding: forbidden.bodyBytes, as: UTF8.self).contains("needs the admin scope"))
    }

    @Test func basicAuthWithAnyUserNameCarriesTheToken() throws {
        let policy = try policy()
        let encoded = "YnJvd3NlcjphZG1pbi10b2tlbi0wMTIzNDU2Nzg5"  // browser:admin-token-0123456789
        let decision = policy.evaluate(
            request(.delete, headers: with(["Authorization": "Basic \(encoded)"])), path: "/library/1",
            route: .handler(scope: .admin))
        #expect(status(decision) == 200)
    }

    @Test func anonymousGetsItsScopeAndCredentialsAreIgnoredWithoutTokens() throws {
        let viewers = try policy(anonymous: .view)
        #expect(status(viewers.evaluate(request(), path: "/library", route: .handler(scope: .view))) == 200)
        #expect(status(viewers.evaluate(request(.post), path: "/snap", route: .handler(scope: .snap))) == 401)
        let open = try policy(anonymous: .admin, tokens: false)
        let stale = with(["Authorization": "Bearer whatever-it-was-before"])
        #expect(
            status(
                open.evaluate(request(.delete, headers: stale), path: "/x", route: .handler(scope: .admin)))
                == 200)
    }

    @Test func failedAttemptsAreLoggedWithoutTheCredentialAndThrottledPerClient() throws {
        let policy = try policy(maximumFailures: 3)
        let wrong = with(["Authorization": "Bearer not-the-token-at-all-secret"])
        for _ in 0..<3 {
            #expect(
                status(
                    policy.evaluate(request(headers: wrong), path: "/library", route: .handler(scope: .view)))
                    == 401)
        }
        // The limit is reached: even the right token waits, from that client only.
        let right = with(["Authorization": "Bearer \(Self.viewToken)"])
        guard
            case .respond(let throttled, _) = policy.evaluate(
                request(headers: right), path: "/library", route: .handler(scope: .view))
        else { return #expect(Bool(false)) }
        #expect(throttled.status.code == 429)
        #expect(throttled.headers["Retry-After"] == "60")
        #expect(
            status(
                policy.evaluate(
                    request(headers: right, peer: "192.0.2.8"), path: "/library",
                    route: .handler(scope: .view))) == 200)
        clock.advance(by: 60_000_000_000)
        #expect(
            status(policy.evaluate(request(headers: right), path: "/library", route: .handler(scope: .view)))
                == 200)
        #expect(log.lines.filter { $0.contains("authentication failed") }.count == 3)
        #expect(log.lines.allSatisfy { !$0.contains("not-the-token") })
        #expect(log.lines.contains { $0.contains("peer=192.0.2.7") })
    }

    @Test func hostMustNameThisDaemon() throws {
        let policy = try policy(anonymous: .admin, tokens: false, allowedHosts: ["camera.example.org"])
        for host in [
            "127.0.0.1:8080", "localhost:8080", "LOCALHOST", "pi.localhost", "[::1]:8080", "192.168.1.20",
            "camera.example.org", "camera.example.org.:443",
        ] {
            #expect(
                status(
                    policy.evaluate(
                        request(headers: ["Host": host]), path: "/", route: .handler(scope: .view))) == 200,
                "\(host)")
        }
        for host in ["evil.example", "camera.example.org.evil.example", "127.0.0.1.nip.io", "", "[::1"] {
            #expect(
                status(
                    policy.evaluate(
                        request(headers: ["Host": host]), path: "/", route: .handler(scope: .view))) == 421,
                "\(host)")
        }
    }

    @Test func ipv4AuthoritiesAreRecognisedFromTheirBytes() {
        for yes in ["127.0.0.1", "127.0.0.1:8080", "0.0.0.0:1", "255.255.255.255:65535", "10.1.2.3"] {
            #expect(OriginRules.isIPv4Authority(yes.utf8), "\(yes)")
        }
        for no in [
            "", "127.0.0", "127.0.0.1.", "256.0.0.1", "1.2.3.4:", "1.2.3.4:123456", "1.2.3.4.5", "a.b.c.d",
            "127.0.0.1.nip.io", "1..2.3", "1.2.3.4:80:80", "0127.0.0.1", ":80",
        ] {
            #expect(!OriginRules.isIPv4Authority(no.utf8), "\(no)")
        }
    }

    @Test func localhostAuthoritiesAreRecognisedFromTheirBytes() {
        for yes in ["localhost", "localhost:8080", "LocalHost:1", "LOCALHOST:65535"] {
            #expect(OriginRules.isLocalhostAuthority(yes.utf8), "\(yes)")
        }
        for no in [
            "", "localhos", "localhost:", "localhost:123456", "localhost.", "localhost.evil.example",
            "localhost:80x", "xlocalhost", "localhost:80:80", "localhost :80",
        ] {
            #expect(!OriginRules.isLocalhostAuthority(no.utf8), "\(no)")
        }
    }

    @Test func crossSiteStateChangesAreRefusedAndScriptsAreNot() throws {
        let policy = try policy(anonymous: .admin, tokens: false, corsOrigins: ["https://dash.example.org"])
        let route = RouteMatch.handler(scope: .snap)
        // curl: no Origin, no Sec-Fetch-Site, any Content-Type.
        #expect(
            status(
                policy.evaluate(
                    request(.post, "/snap", headers: with(["Content-Type": "text/plain"])), path: "/snap",
                    route: route)) == 200)
        // The daemon's own page.
        #expect(
            status(
                policy.evaluate(
                    request(.post, "/snap", headers: with(["Origin": "http://127.0.0.1:8080"])),
                    path: "/snap", route: route)) == 200)
        for origin in ["http://evil.example", "null", "http://127.0.0.1:9999", "http://localhost:8080"] {
            #expect(
                status(
                    policy.evaluate(
                        request(.post, "/snap", headers: with(["Origin": origin])), path: "/snap",
                        route: route)) == 403, "\(origin)")
        }
        #expect(
            status(
                policy.evaluate(
                    request(.post, "/snap", headers: with(["Sec-Fetch-Site": "cross-site"])), path: "/snap",
                    route: route)) == 403)
        // A listed origin may, and reading is never refused for the origin alone.
        #expect(
            status(
                policy.evaluate(
                    request(.post, "/snap", headers: with(["Origin": "https://dash.example.org"])),
                    path: "/snap", route: route)) == 200)
        #expect(
            status(
                policy.evaluate(
                    request(.get, "/library", headers: with(["Origin": "http://evil.example"])),
                    path: "/library", route: .handler(scope: .view))) == 200)
    }

    @Test func corsPreflightsAndHeadersOnlyForListedOrigins() throws {
        let policy = try policy(corsOrigins: ["https://dash.example.org"])
        let preflight = with(["Origin": "https://dash.example.org", "Access-Control-Request-Method": "POST"])
        guard
            case .respond(let answer, _) = policy.evaluate(
                request(.options, "/snap", headers: preflight), path: "/snap",
                route: .methodNotAllowed(allowed: [.post]))
        else { return #expect(Bool(false)) }
        #expect(answer.status.code == 204)
        #expect(answer.headers["Access-Control-Allow-Origin"] == "https://dash.example.org")
        #expect(answer.headers["Access-Control-Allow-Methods"] == "POST")
        #expect(answer.headers["Access-Control-Allow-Headers"]?.contains("Authorization") == true)
        let stranger = with(["Origin": "https://evil.example", "Access-Control-Request-Method": "POST"])
        #expect(
            status(
                policy.evaluate(
                    request(.options, "/snap", headers: stranger), path: "/snap",
                    route: .methodNotAllowed(allowed: [.post]))) == 403)
        // An actual request from the listed origin gets the headers, with its answer.
        let actual = with(["Origin": "https://dash.example.org", "Authorization": "Bearer \(Self.viewToken)"])
        guard
            case .proceed(let headers, _, _) = policy.evaluate(
                request(headers: actual), path: "/library", route: .handler(scope: .view))
        else { return #expect(Bool(false)) }
        #expect(headers["Access-Control-Allow-Origin"] == "https://dash.example.org")
        #expect(headers["Vary"] == "Origin")
        guard
            case .proceed(let none, _, _) = policy.evaluate(
                request(
                    headers: with([
                        "Origin": "https://evil.example", "Authorization": "Bearer \(Self.viewToken)",
                    ])), path: "/library", route: .handler(scope: .view))
        else { return #expect(Bool(false)) }
        #expect(none["Access-Control-Allow-Origin"] == nil)
    }

    @Test func aSignedLinkGrantsViewForItsPathOnly() throws {
        let policy = try policy()
        let links = SignedLinks(key: Array(repeating: 1, count: 32))
        let now = clock.wallMillisecondsNow() / 1000
        let link = links.link(path: "/media/4.jpg", expiresAt: now + 30)
        guard
            case .proceed(_, let target, let expiresAt) = policy.evaluate(
                request(.get, link), path: "/media/4.jpg", route: .handler(scope: .view))
        else { return #expect(Bool(false)) }
        #expect(target == "/media/4.jpg")
        // The grant ends with the link, for a response that outlives the request (a stream).
        #expect(expiresAt == now + 30)
        let moved = link.replacing("/media/4.jpg", with: "/media/5.jpg")
        guard
            case .respond(let refused, let logged) = policy.evaluate(
                request(.get, moved), path: "/media/5.jpg", route: .handler(scope: .view))
        else { return #expect(Bool(false)) }
        #expect(refused.status.code == 403)
        // The refused signature is not what the access log shows.
        #expect(logged == "/media/5.jpg?exp=\(now + 30)&sig=-")
        // It grants view, never more, whatever route it is put on.
        #expect(
            status(
                policy.evaluate(request(.delete, link), path: "/media/4.jpg", route: .handler(scope: .admin)))
                == 401)
        clock.advance(by: 31_000_000_000)
        #expect(
            status(policy.evaluate(request(.get, link), path: "/media/4.jpg", route: .handler(scope: .view)))
                == 403)
    }

    @Test func healthNeedsNoCredentialsAndUnknownPathsNeedView() throws {
        let policy = try policy()
        #expect(
            status(
                policy.evaluate(request(.get, "/healthz"), path: "/healthz", route: .handler(scope: .none)))
                == 200)
        #expect(status(policy.evaluate(request(.get, "/nothing"), path: "/nothing", route: .notFound)) == 401)
    }
}

extension HTTPResponse {
    fileprivate var bodyBytes: [UInt8] {
        if case .bytes(let bytes) = body { return bytes }
        return []
    }
}
