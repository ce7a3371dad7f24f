import ShutterHTTP
import ShutterSystem

/// Access control and the browser defences for every request, before any handler runs:
///
/// 1. `Host` must name this daemon (`421` otherwise): stops DNS rebinding.
/// 2. A CORS preflight is answered (it carries no credentials).
/// 3. A cross-site request that changes state is refused (`403`).
/// 4. The route's scope: a valid signed link grants `view` for its path; otherwise the
///    credentials' scope, or `anonymous` without any. Missing or wrong credentials are a `401`
///    that names both schemes; too small a scope a `403` naming the scope needed. A client
///    whose failed attempts reach the limit gets `429` until its window passes.
///
/// Runs on the event loop: every step is a few hashes and comparisons.
public final class AccessPolicy: HTTPRequestPolicy {
    /// The settings the daemon derives from its configuration.
    public struct Settings: Sendable {
        public var tokens: AccessTokens
        /// What a request without credentials may do.
        public var anonymous: AccessScope
        public var origins: OriginRules
        /// nil: signed links are not accepted.
        public var links: SignedLinks?

        public init(tokens: AccessTokens, anonymous: AccessScope, origins: OriginRules, links: SignedLinks?) {
            self.tokens = tokens
            self.anonymous = anonymous
            self.origins = origins
            self.links = links
        }
    }

    /// The realm browsers show in their login prompt.
    static let realm = "shutterd"

    let settings: Settings
    private let throttle: LoginThrottle
    private let clock: any Clock
    private let logger: Logger

    public convenience init(settings: Settings, clock: any Clock, logger: Logger) {
        self.init(settings: settings, throttle: LoginThrottle.Limits(), clock: clock, logger: logger)
    }

    init(settings: Settings, throttle: LoginThrottle.Limits, clock: any Clock, logger: Logger) {
        self.settings = settings
        self.throttle = LoginThrottle(limits: throttle)
        self.clock = clock
        self.logger = logger
    }

    public func evaluate(_ request: HTTPRequest, path: String, route: RouteMatch) -> HTTPPolicyDecision {
        let decision = decide(request, path: path, route: route)
        // A signature is a credential: a refused request does not leave it in the access log.
        if case .respond(let response, nil) = decision, request.target.contains("sig=") {
            return .respond(response, loggedTarget: SignedLinks.redactingSignature(request.target))
        }
        return decision
    }

    private func decide(_ request: HTTPRequest, path: String, route: RouteMatch) -> HTTPPolicyDecision {
        guard settings.origins.isAllowedHost(request.headers["Host"]) else {
            return .respond(
                HTTPError(
                    HTTPStatus(code: 421, reason: "Misdirected Request"), "unknown host",
                    detail:
                        "this server does not answer for host '\((request.headers["Host"] ?? "").prefix(100))'; add it to allowed_hosts"
                ).response())
        }
        if let preflight = settings.origins.preflightResponse(request, route: route) {
            return .respond(preflight)
        }
        let cors = settings.origins.corsHeaders(origin: request.headers["Origin"])
        if let refusal = settings.origins.crossSiteRefusal(request) {
            return .respond(
                withHeaders(cors, HTTPError(.forbidden, "cross-site request refused", detail: refusal)))
        }
        let required: AccessScope
        switch route {
        case .handler(let scope): required = scope
        // Unknown paths and methods are told apart only to those who may look.
        case .notFound, .methodNotAllowed: required = .view
        }
        // Only where a link can be made: elsewhere `exp` and `sig` are the handler's to judge.
        if let links = settings.links, required <= .view, request.target.utf8.contains(UInt8(ascii: "?")),
            SignedLinks.isLinkable(path)
        {
            switch links.check(request, path: path, nowSeconds: clock.wallMillisecondsNow() / 1000) {
            case .absent: break
            // The expiry goes with the request: a stream it opens must end then too.
            case .valid(let target, let expiresAt):
                return .proceed(headers: cors, target: target, expiresAt: expiresAt)
            case .expired:
                return .respond(
                    withHeaders(
                        cors, HTTPError(.forbidden, "link expired", detail: "the signed link has expired")))
            case .invalid(let reason):
                return .respond(withHeaders(cors, HTTPError(.forbidden, "invalid link", detail: reason)))
            }
        }
        // With no tokens there is nothing to check credentials against: they are ignored, so a
        // browser or script that sends some still gets what anonymous clients get.
        let credential = settings.tokens.isEmpty ? .none : PresentedCredential(request.headers)
        let peer = request.peer?.host ?? "unknown"
        let granted: AccessScope
        switch credential {
        case .none:
            guard settings.anonymous >= required else {
                return .respond(
                    withHeaders(
                        cors,
                        Self.unauthorized(
                            "this needs the \(required) scope; send a token (Bearer, or Basic with the token as the password)"
                        )))
            }
            return .proceed(headers: cors)
        case .malformed(let reason):
            if let refused = refuseIfThrottled(peer: peer, cors: cors) { return refused }
            recordFailure(peer: peer, request: request, path: path, reason: "malformed credentials")
            return .respond(withHeaders(cors, Self.unauthorized(reason)))
        case .token(let token):
            if let refused = refuseIfThrottled(peer: peer, cors: cors) { return refused }
            guard let scope = settings.tokens.scope(of: token) else {
                recordFailure(peer: peer, request: request, path: path, reason: "unknown token")
                return .respond(withHeaders(cors, Self.unauthorized("the token is not valid")))
            }
            granted = max(scope, settings.anonymous)
        }
        guard granted >= required else {
            return .respond(
                withHeaders(
                    cors,
                    HTTPError(
                        .forbidden, "insufficient scope",
                        detail:
                            "\(request.method) \(path.prefix(200)) needs the \(required) scope; this token has \(granted)"
                    )
                ))
        }
        return .proceed(headers: cors)
    }

    private func refuseIfThrottled(peer: String, cors: HTTPHeaders) -> HTTPPolicyDecision? {
        guard let seconds = throttle.retryAfter(peer: peer, now: clock.monotonicNow()) else { return nil }
        return .respond(
            withHeaders(
                cors,
                HTTPError(
                    .tooManyRequests, "too many failed logins",
                    detail: "too many failed attempts from \(peer); try again in \(seconds) s",
                    headers: ["Retry-After": String(seconds)])))
    }

    /// Logs a failed attempt (never the credential) and counts it against `peer`.
    private func recordFailure(peer: String, request: HTTPRequest, path: String, reason: String) {
        let metadata = [
            "peer": peer, "method": request.method.rawValue, "path": String(path.prefix(200)),
            "reason": reason,
        ]
        switch throttle.recordFailure(peer: peer, now: clock.monotonicNow()) {
        case .counted:
            logger.warning("authentication failed", metadata)
        case .limitReached:
            logger.warning(
                "authentication failed; refusing this client for a while",
                metadata.merging(
                    [
                        "failures": String(throttle.limits.maximumFailures),
                        "seconds": String(throttle.limits.windowNanoseconds / 1_000_000_000),
                    ], uniquingKeysWith: { $1 }))
        }
    }

    /// A `401` naming both schemes (RFC 9110 §11.6.1): Basic makes browsers prompt.
    static func unauthorized(_ detail: String) -> HTTPError {
        var headers: HTTPHeaders = [:]
        headers.add(name: "WWW-Authenticate", value: "Bearer realm=\"\(realm)\"")
        headers.add(name: "WWW-Authenticate", value: "Basic realm=\"\(realm)\", charset=\"UTF-8\"")
        return HTTPError(.unauthorized, "unauthorized", detail: detail, headers: headers)
    }

    private func withHeaders(_ headers: HTTPHeaders, _ error: HTTPError) -> HTTPResponse {
        var response = error.response()
        for (name, value) in headers { response.headers.add(name: name, value: value) }
        return response
    }
}
