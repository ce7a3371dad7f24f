import FoundationEssentials
import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// `/library`: the catalog's records, paged, and one picture's record, deletion and `keep`.
struct LibraryRoutes: Sendable {
    let catalog: MediaCatalog

    /// The parameters `GET /library` accepts: made once, not a new set for every poll.
    static let listingParameters: Set<String> = ["limit", "before", "after", "job", "label"]

    /// Largest page `GET /library` (and `GET /jobs`) serves.
    static let maximumPageSize: Int64 = 500

    func register(in router: inout Router) {
        router.add(
            .get, "/library", scope: .view,
            .immediateOrTask(
                immediate: { request, _ in try notModified(request) },
                task: { request, _ in try await library(request) }))
        router.add(
            .get, "/library/{id}", scope: .view,
            .task { request, parameters in try await picture(request, parameters) })
        router.add(
            .delete, "/library/{id}", scope: .admin,
            .task { request, parameters in try await deletePicture(request, parameters) })
        router.add(
            .patch, "/library/{id}", scope: .admin,
            .task { request, parameters in try await patchPicture(request, parameters) })
    }

    /// `GET /library`: a page of records, newest first; `after=` pages forward in the order taken;
    /// `job=` lists that job's pictures, in the order taken; `label=` those taken with that label
    /// (exactly), newest first like the whole listing.
    func library(_ request: HTTPRequest) async throws -> HTTPResponse {
        let (limit, before, after, job, label) = try listingQuery(request)
        let etag = listingETag()
        if let notModified = Self.notModified(request, etag: etag) { return notModified }
        let page = try await catalog.page(
            before: before, after: after, limit: Int(limit), jobID: job, label: label)
        var items = "["
        items.reserveCapacity(page.items.count * 320 + 2)
        for (index, record) in page.items.enumerated() {
            if index > 0 { items += "," }
            items += record.json
        }
        items += "]"
        var object = JSONObjectWriter()
        object.rawField("items", items)
        var next: String?
        if page.hasMore, let last = page.items.last {
            var link = after != nil ? "/library?after=\(last.id)" : "/library?before=\(last.id)"
            if let before, after != nil { link += "&before=\(before)" }
            if let job { link += "&job=\(job)" }
            if let label { link += "&label=\(PercentEncoding.encodeQueryValue(label))" }
            next = link + "&limit=\(limit)"
        }
        object.field("next", next)
        return .json(.ok, object.finished(), headers: ["ETag": etag, "Cache-Control": "no-cache"])
    }

    /// `GET /library`'s answer when the client's copy is current: a `304`, on the event loop.
    ///
    /// Polling with `If-None-Match` is how scripts and the page watch the library, so the common
    /// answer is made without a task or the catalog's thread: the ETag is the catalog's change
    /// counter, an atomic. nil hands the request to `library`. The query is checked first, so a
    /// bad one gets its `400` with or without the header.
    func notModified(_ request: HTTPRequest) throws -> HTTPResponse? {
        guard request.headers["If-None-Match"] != nil else { return nil }
        _ = try listingQuery(request)
        return Self.notModified(request, etag: listingETag())
    }

    /// The listing changes only when a picture is added, deleted or marked, so one counter
    /// validates every page and filter.
    private func listingETag() -> String {
        "W/\"\(catalog.instanceToken)-\(catalog.changeCounter)\""
    }

    private static func notModified(_ request: HTTPRequest, etag: String) -> HTTPResponse? {
        guard let ifNoneMatch = request.headers["If-None-Match"],
            RepresentationValidators.list(ifNoneMatch, matches: etag, weak: true)
        else { return nil }
        return HTTPResponse(status: .notModified, headers: ["ETag": etag, "Cache-Control": "no-cache"])
    }

    /// `GET /library`'s parameters, checked: the page size, the cursors and the filters.
    private func listingQuery(_ request: HTTPRequest) throws -> (
        limit: Int64, before: Int64?, after: Int64?, job: Int64?, label: String?
    ) {
        let query = try QueryParameters(request, allowed: Self.listingParameters)
        let limit = try query.integer("limit", in: 1...Self.maximumPageSize) ?? 50
        let before = try query.integer("before", in: 1...Int64.max)
        let job = try query.integer("job", in: 1...Int64.max)
        let label = try query.text("label")
        if let label, label.isEmpty || label.utf8.count > SnapOptions.maximumLabelBytes {
            throw HTTPError(
                .badRequest, "invalid parameter",
                detail: "label must be 1 to \(SnapOptions.maximumLabelBytes) bytes long")
        }
        // A job's pictures read in the order taken, so its listing pages forward from the start.
        let after = try query.integer("after", in: 0...Int64.max) ?? (job != nil ? 0 : nil)
        return (limit, before, after, job, label)
    }

    /// `GET /library/{id}`: one record.
    func picture(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try parameters.positiveID(of: "picture")
        _ = try QueryParameters(request, allowed: [])
        guard let record = try await catalog.record(id: id) else { throw Self.notFound(id) }
        return .json(.ok, record.json)
    }

    /// `DELETE /library/{id}`: removes the record and its file.
    func deletePicture(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try parameters.positiveID(of: "picture")
        _ = try QueryParameters(request, allowed: [])
        try requireEmptyBody(request)
        guard try await catalog.delete(id: id) else { throw Self.notFound(id) }
        return HTTPResponse(status: .noContent)
    }

    /// `PATCH /library/{id}` with `{"keep": true|false}`: marks the picture as kept by retention (or
    /// not) and answers with the record.
    func patchPicture(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try parameters.positiveID(of: "picture")
        _ = try QueryParameters(request, allowed: [])
        let keep = try PicturePatch.decodeKeep(request.body)
        guard let record = try await catalog.setKeep(id: id, keep: keep) else { throw Self.notFound(id) }
        return .json(.ok, record.json)
    }

    static func notFound(_ id: Int64) -> HTTPError {
        HTTPError(.notFound, detail: "no picture with id \(id)")
    }
}
