import ShutterHTTP
import ShutterSystem

/// The parameters of `GET /library`, checked: every one bounded, a bad one a 400 naming it.
///
/// Pure: parsed from the request's query alone, so the rules are tested without a catalog.
struct LibraryQuery: Equatable {
    /// Every parameter `GET /library` accepts.
    static let names: Set<String> = [
        "limit", "before", "after", "job", "label", "keep", "since", "until", "wait",
    ]

    var limit: Int64 = 50
    var before: Int64?
    var after: Int64?
    var job: Int64?
    var label: String?
    var keep: Bool?
    /// Wall milliseconds: pictures taken at or after it.
    var since: Int64?
    /// Wall milliseconds: pictures taken before it.
    var until: Int64?
    /// Seconds to wait for a picture after `after` when there is none yet (the long-poll).
    var wait: Int64?

    init(
        limit: Int64 = 50, before: Int64? = nil, after: Int64? = nil, job: Int64? = nil, label: String? = nil,
        keep: Bool? = nil, since: Int64? = nil, until: Int64? = nil
    ) {
        self.limit = limit
        self.before = before
        self.after = after
        self.job = job
        self.label = label
        self.keep = keep
        self.since = since
        self.until = until
    }

    /// Throws 400 for an unknown, repeated or malformed parameter, naming it.
    init(_ request: HTTPRequest) throws {
        let query = try QueryParameters(request, allowed: Self.names)
        limit = try query.integer("limit", in: 1...LibraryRoutes.maximumPageSize) ?? 50
        before = try query.integer("before", in: 1...Int64.max)
        job = try query.integer("job", in: 1...Int64.max)
        label = try query.text("label")
        if let label, label.isEmpty || label.utf8.count > SnapOptions.maximumLabelBytes {
            throw HTTPError(
                .badRequest, "invalid parameter",
                detail: "label must be 1 to \(SnapOptions.maximumLabelBytes) bytes long")
        }
        // A job's pictures read in the order taken, so its listing pages forward from the start.
        after = try query.integer("after", in: 0...Int64.max) ?? (job != nil ? 0 : nil)
        keep = try query.strictBoolean("keep")
        since = try Self.time("since", query)
        until = try Self.time("until", query)
        wait = try query.integer("wait", in: 0...LongPoll.maximumWaitSeconds)
        if wait != nil, try query.text("after") == nil {
            throw HTTPError(
                .badRequest, "invalid parameter",
                detail: "wait needs after: it waits for pictures after that id")
        }
        if let since, let until, since >= until {
            throw HTTPError(
                .badRequest, "invalid parameter",
                detail:
                    "since (\(Timestamp.iso8601(millisecondsSince1970: since))) must be before until (\(Timestamp.iso8601(millisecondsSince1970: until)))"
            )
        }
    }

    /// An RFC 3339 time parameter in wall milliseconds, or nil if absent.
    private static func time(_ name: String, _ query: QueryParameters) throws -> Int64? {
        guard let text = try query.text(name) else { return nil }
        guard let milliseconds = RFC3339Time.milliseconds(text) else {
            throw HTTPError(
                .badRequest, "invalid parameter",
                detail:
                    "\(name) must be an RFC 3339 time such as 2026-12-02T10:00:00Z or 2026-12-02T11:00:00.5+01:00, not '\(text.prefix(RFC3339Time.maximumBytes))'"
            )
        }
        return milliseconds
    }

    /// The link to the page after one ending with `lastID`: the same filters, the cursor moved.
    func next(after lastID: Int64) -> String {
        var link = after != nil ? "/library?after=\(lastID)" : "/library?before=\(lastID)"
        if let before, after != nil { link += "&before=\(before)" }
        if let job { link += "&job=\(job)" }
        if let label { link += "&label=\(PercentEncoding.encodeQueryValue(label))" }
        if let keep { link += "&keep=\(keep)" }
        // Rounded up to whole milliseconds when read, so this spelling selects the same pictures.
        if let since { link += "&since=\(Timestamp.iso8601(millisecondsSince1970: since))" }
        if let until { link += "&until=\(Timestamp.iso8601(millisecondsSince1970: until))" }
        return link + "&limit=\(limit)"
    }
}
