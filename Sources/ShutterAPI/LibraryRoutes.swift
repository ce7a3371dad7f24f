import FoundationEssentials
import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// `/library`: the catalog's records, paged, and one picture's record, deletion and `keep`.
struct LibraryRoutes: Sendable {
    let catalog: MediaCatalog
    /// `wait=` on `after=` listings.
    let longPoll: LongPoll

    /// Largest page `GET /library` (and `GET /jobs`) serves.
    static let maximumPageSize: Int64 = 500

    func register(in router: inout Router) {
        router.add(.get, "/library", scope: .view, .task { request, _ in try await library(request) })
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
    /// (exactly), `keep=` those marked keep or not, `since=`/`until=` those taken in that time
    /// range, all newest first like the whole listing unless `after` says otherwise.
    func library(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = try LibraryQuery(request)
        if let wait = query.wait { try await waitForPictures(query, seconds: wait) }

        // The listing changes only when a picture is added, deleted or (for `keep`) marked, and
        // the counter counts all three, so one counter validates every page of every filter:
        // pollers get a 304 without touching the database.
        let etag = "W/\"\(catalog.instanceToken)-\(await catalog.changeCounter)\""
        if let ifNoneMatch = request.headers["If-None-Match"],
            RepresentationValidators.list(ifNoneMatch, matches: etag, weak: true)
        {
            return HTTPResponse(status: .notModified, headers: ["ETag": etag, "Cache-Control": "no-cache"])
        }
        let page = try await catalog.page(
            before: query.before, after: query.after, limit: Int(query.limit), jobID: query.job,
            label: query.label, keep: query.keep, takenSince: query.since, takenUntil: query.until)
        var items = "["
        for (index, record) in page.items.enumerated() {
            if index > 0 { items += "," }
            items += record.json
        }
        items += "]"
        var object = JSONObjectWriter()
        object.rawField("items", items)
        var next: String?
        if page.hasMore, let last = page.items.last { next = query.next(after: last.id) }
        object.field("next", next)
        return .json(.ok, object.finished(), headers: ["ETag": etag, "Cache-Control": "no-cache"])
    }

    /// Returns once the `after=` listing has a picture, or after `seconds` (the long-poll).
    func waitForPictures(_ query: LibraryQuery, seconds: Int64) async throws {
        _ = try await longPoll.answer(
            waitingUpTo: seconds, for: [.pictureCreated],
            look: {
                try await catalog.page(
                    before: query.before, after: query.after, limit: 1, jobID: query.job, label: query.label,
                    keep: query.keep, takenSince: query.since, takenUntil: query.until
                ).items.isEmpty
            },
            isReady: { isEmpty in !isEmpty })
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
