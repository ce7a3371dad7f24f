/// Decides, before a handler runs, whether a request may proceed: access control, `Host` and
/// `Origin` checks, CORS. Called on the event-loop thread for every parsed request, so it must
/// never block; it sees what routing found, so it can answer a preflight or demand a scope.
public protocol HTTPRequestPolicy: Sendable {
    func evaluate(_ request: HTTPRequest, path: String, route: RouteMatch) -> HTTPPolicyDecision
}

/// What routing found for a request, as a policy sees it.
public enum RouteMatch: Sendable, Equatable {
    /// A handler that needs `scope`.
    case handler(scope: AccessScope)
    /// The path exists for other methods (an `OPTIONS` preflight lands here).
    case methodNotAllowed(allowed: [HTTPMethod])
    case notFound
}

/// A policy's answer.
public enum HTTPPolicyDecision: Sendable {
    /// Go on as routing decided; `headers` are added to the response (CORS), and `target`, when
    /// set, replaces the request's target for the handler and the access log (a signed link's
    /// signature is taken out, so it is neither parsed as a parameter nor logged), and
    /// `expiresAt`, when set, is the Unix second after which the grant ends (a signed link's
    /// `exp`; see `HTTPRequest.accessExpiresAt`).
    case proceed(headers: HTTPHeaders = [:], target: String? = nil, expiresAt: Int64? = nil)
    /// Answer with this instead of running anything; `loggedTarget`, when set, is what the
    /// access log shows instead of the target (a refused signed link's signature is not logged).
    case respond(HTTPResponse, loggedTarget: String? = nil)
}
