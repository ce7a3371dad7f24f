import ShutterSystem

/// Values captured from `{name}` segments of a route pattern.
public struct RouteParameters: Sendable, Equatable {
    public private(set) var values: [String: String] = [:]
    public init(_ values: [String: String] = [:]) { self.values = values }
    public subscript(name: String) -> String? { values[name] }
}

/// How a route's handler runs.
public enum RouteHandler: Sendable {
    /// Runs on the event-loop thread: only for work that never blocks (a file open, a memory copy).
    case immediate(@Sendable (HTTPRequest, RouteParameters) throws -> HTTPResponse)
    /// Runs as a Swift task; its response is handed back to the loop.
    case task(@Sendable (HTTPRequest, RouteParameters) async throws -> HTTPResponse)
    /// Runs `immediate` on the event-loop thread; when it returns nil, runs `task` as a Swift task.
    ///
    /// For endpoints whose common case is cheap (a cached file) and whose rare case is CPU work.
    case immediateOrTask(
        immediate: @Sendable (HTTPRequest, RouteParameters) throws -> HTTPResponse?,
        task: @Sendable (HTTPRequest, RouteParameters) async throws -> HTTPResponse)
    /// Runs `immediate` on the event-loop thread; when it returns nil, runs `deferred` there too,
    /// which hands the work to a thread of its own and answers through the `HTTPResponder`, from
    /// that thread, with no task in between.
    ///
    /// For a common answer that needs a blocking read (an uncached `/library` page): the read's
    /// thread answers the loop directly, where a task would add two hand-offs through the pool.
    case immediateOrDeferred(
        immediate: @Sendable (HTTPRequest, RouteParameters) throws -> HTTPResponse?,
        deferred: @Sendable (HTTPRequest, RouteParameters, HTTPResponder) throws -> Void)
}

/// Answers a request whose handler returned before its answer was ready
/// (`RouteHandler.immediateOrDeferred`), from any thread.
///
/// The first answer counts; a later one is dropped. A handler that never answers leaves its
/// connection waiting until the client gives up, as a task that never returns would.
public final class HTTPResponder: Sendable {
    private let deliver: @Sendable (HTTPResponse) -> Void
    private let mapError: @Sendable (any Error) -> HTTPResponse
    private let answered = LockedValue(false)

    /// A responder that hands its answer to `deliver` (which must not block), and turns an error
    /// into an answer with `mapError`.
    public init(
        deliver: @escaping @Sendable (HTTPResponse) -> Void,
        mapError: @escaping @Sendable (any Error) -> HTTPResponse
    ) {
        self.deliver = deliver
        self.mapError = mapError
    }

    /// Answers with `response`.
    public func respond(_ response: HTTPResponse) {
        let first = answered.withLock { answered in
            defer { answered = true }
            return !answered
        }
        if first { deliver(response) }
    }

    /// Answers with what `error` maps to, as if the handler had thrown it.
    public func fail(_ error: any Error) {
        respond(mapError(error))
    }
}

/// Maps method and path to a handler. Patterns are literal segments and `{name}`
/// parameters, optionally with a literal suffix in the same segment (`/media/{id}.jpg`).
public struct Router: Sendable {
    /// What `resolve` found.
    public enum Resolution {
        /// The handler, the values of its pattern's parameters, the scope it needs, and the
        /// pattern itself (`GET /media/{id}.jpg`: what metrics label requests by, never the path).
        case handler(RouteHandler, RouteParameters, scope: AccessScope, route: String)
        /// The path exists but not for this method: answer 405 with `Allow`.
        case methodNotAllowed(allowed: [HTTPMethod])
        case notFound
    }

    /// A class, so the walk over the routes copies one reference a route, not four.
    private final class Route: Sendable {
        let method: HTTPMethod
        let pattern: String
        let segments: [Segment]
        let handler: RouteHandler
        let scope: AccessScope

        init(
            method: HTTPMethod, pattern: String, segments: [Segment], handler: RouteHandler,
            scope: AccessScope
        ) {
            self.method = method
            self.pattern = pattern
            self.segments = segments
            self.handler = handler
            self.scope = scope
        }
    }

    private enum Segment: Sendable, Equatable {
        case literal(String)
        case parameter(name: String, suffix: String)
    }

    private var routes: [Route] = []
    /// The indices of the routes whose pattern starts with each literal segment ("" for `/`),
    /// in the order added: a request is matched against the few routes under its first
    /// segment, not all of them (walking them all was a tenth of a media request's CPU).
    private var routesByFirstSegment: [String: [Int]] = [:]
    /// The indices of the routes whose first segment is a parameter: candidates for any path.
    private var routesWithParameterFirst: [Int] = []

    public init() {}

    /// Adds a route that a request needs `scope` for (enforced by the server's policy, if any);
    /// `GET` routes answer `HEAD` too. A route that names no scope needs `admin`: one forgotten
    /// is closed, not open.
    public mutating func add(
        _ method: HTTPMethod, _ pattern: String, scope: AccessScope = .admin, _ handler: RouteHandler
    ) {
        let segments = pattern.split(separator: "/", omittingEmptySubsequences: true).map { part -> Segment in
            if part.hasPrefix("{"), let close = part.firstIndex(of: "}") {
                let name = String(part[part.index(after: part.startIndex)..<close])
                return .parameter(name: name, suffix: String(part[part.index(after: close)...]))
            }
            return .literal(String(part))
        }
        switch segments.first {
        case .literal(let literal): routesByFirstSegment[literal, default: []].append(routes.count)
        case .parameter: routesWithParameterFirst.append(routes.count)
        case nil: routesByFirstSegment["", default: []].append(routes.count)
        }
        routes.append(
            Route(method: method, pattern: pattern, segments: segments, handler: handler, scope: scope))
    }

    /// Every route as `METHOD /pattern`, in the order added (for an index of the API).
    public var endpoints: [String] { routes.map { "\($0.method) \($0.pattern)" } }

    /// Every route with the scope it needs, in the order added.
    public var scopes: [(endpoint: String, scope: AccessScope)] {
        routes.map { ("\($0.method) \($0.pattern)", $0.scope) }
    }

    /// Finds the handler for `method` and the decoded `path`.
    public func resolve(method: HTTPMethod, path: String) -> Resolution {
        // A trailing slash names a different resource ("/library/" is not "/library").
        if path.utf8.count > 1 && path.utf8.last == UInt8(ascii: "/") { return .notFound }
        let parts = path.splitASCII(UInt8(ascii: "/"), omittingEmptySubsequences: true)
        var allowed: [HTTPMethod] = []
        let listed = routesByFirstSegment[parts.first.map(String.init) ?? ""] ?? []
        let candidates =
            routesWithParameterFirst.isEmpty ? listed : (listed + routesWithParameterFirst).sorted()
        for index in candidates {
            let route = routes[index]
            guard let parameters = Self.match(route.segments, parts) else { continue }
            if route.method == method || (method == .head && route.method == .get) {
                return .handler(route.handler, parameters, scope: route.scope, route: route.pattern)
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
            if route.method == .get && !allowed.contains(.head) { allowed.append(.head) }
        }
        return allowed.isEmpty ? .notFound : .methodNotAllowed(allowed: allowed)
    }

    private static func match(_ segments: [Segment], _ parts: [Substring]) -> RouteParameters? {
        guard segments.count == parts.count else { return nil }
        // The literals first: a route that does not match costs no allocation.
        for (segment, part) in zip(segments, parts) {
            if case .literal(let literal) = segment, part != literal { return nil }
        }
        var values: [String: String] = [:]
        for (segment, part) in zip(segments, parts) {
            switch segment {
            case .literal:
                continue
            case .parameter(let name, let suffix):
                let bytes = part.utf8
                let suffixLength = suffix.utf8.count
                guard bytes.count > suffixLength, bytes.suffix(suffixLength).elementsEqual(suffix.utf8) else {
                    return nil
                }
                values[name] = String(part[..<bytes.index(bytes.endIndex, offsetBy: -suffixLength)])
            }
        }
        return RouteParameters(values)
    }
}
