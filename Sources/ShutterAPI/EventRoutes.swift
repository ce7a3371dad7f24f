import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// `/events`: the catalog's changes as server-sent events, replayed from `Last-Event-ID`.
struct EventRoutes: Sendable {
    let hub: EventHub

    func register(in router: inout Router) {
        router.add(.get, "/events", scope: .view, .immediate { request, _ in try events(request) })
    }

    /// `GET /events`: `text/event-stream` of `picture.*`, `job.*`, `camera.state` and
    /// `storage.state`; with `Last-Event-ID` (or `last_event_id=`) what came after that id first;
    /// `types=` a comma-separated list of the types wanted.
    ///
    /// Immediate (on the loop), because a stream must be answered before anything pipelined
    /// behind it is read, and because the stream joins the hub, which lives on the loop.
    func events(_ request: HTTPRequest) throws -> HTTPResponse {
        let query = try QueryParameters(request, allowed: ["types", "last_event_id"])
        let types = try query.text("types").map(Self.parseTypes)
        let cursor = try Self.lastEventID(request, query)
        let stream = try hub.openStream(after: cursor, types: types)
        return HTTPResponse(
            status: .ok,
            headers: [
                "Content-Type": "text/event-stream; charset=utf-8",
                "Cache-Control": "no-store",
                // Stops buffering reverse proxies (nginx) from holding events back.
                "X-Accel-Buffering": "no",
            ],
            body: .stream(stream))
    }

    /// The cursor to replay after: the `Last-Event-ID` header, which EventSource sends with the
    /// newest id it saw when it reconnects, wins over the query's `last_event_id` (the URL it
    /// reconnects to still carries the first one).
    static func lastEventID(_ request: HTTPRequest, _ query: QueryParameters) throws -> Int64? {
        // An empty value is what EventSource sends before it has seen an id: no cursor from it.
        if let header = request.headers["Last-Event-ID"], !header.trimmingSpaces.isEmpty {
            let text = header.trimmingSpaces
            guard text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                let id = Int64(text)
            else {
                throw HTTPError(
                    .badRequest, "invalid header",
                    detail: "Last-Event-ID must be an event id this server sent, not '\(text.prefix(40))'")
            }
            return id
        }
        return try query.integer("last_event_id", in: 0...Int64.max)
    }

    /// `picture.created,job.ended` as a set; 400 naming an unknown type.
    static func parseTypes(_ text: String) throws -> Set<CatalogEventType> {
        var types = Set<CatalogEventType>()
        for name in text.split(separator: ",", omittingEmptySubsequences: false) {
            let name = String(name).trimmingSpaces
            guard let type = CatalogEventType(rawValue: name) else {
                let known = CatalogEventType.allCases.map(\.rawValue).joined(separator: ", ")
                throw HTTPError(
                    .badRequest, "invalid parameter",
                    detail: "types: unknown event type '\(name.prefix(40))'; known: \(known)")
            }
            types.insert(type)
        }
        return types
    }
}

extension String {
    /// Without leading and trailing spaces and tabs.
    fileprivate var trimmingSpaces: String {
        let bytes = Array(utf8)
        let isSpace: (UInt8) -> Bool = { $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "\t") }
        guard let first = bytes.firstIndex(where: { !isSpace($0) }),
            let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return "" }
        return String(decoding: bytes[first...last], as: UTF8.self)
    }
}
