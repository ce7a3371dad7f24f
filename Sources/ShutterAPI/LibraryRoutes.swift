import FoundationEssentials
import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// `/library`: the catalog's records, paged, and one picture's record, deletion and `keep`.
struct LibraryRoutes: Sendable {
    let catalog: MediaCatalog
    /// `wait=` on `after=` listings.
    let longPoll: LongPoll
    /// Pages already written, answered again while the catalog has not changed.
    let pages = ListingPageCache()

    /// Largest page `GET /library` (and `GET /jobs`) serves.
    static let maximumPageSize: Int64 = 500

    func register(in router: inout Router) {
        router.add(
            .get, "/library", scope: .view,
            .immediateOrDeferred(
                immediate: { request, _ in try answerOnTheLoop(request) },
                deferred: { request, _, responder in try readPage(request, responder) }))
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

    /// `GET /library`, when `answerOnTheLoop` could not answer: a page of records, newest first;
    /// `after=` pages forward in the order taken; `job=` lists that job's pictures, in the order taken; `label=` those taken with that label
    /// (exactly), `keep=` those marked keep or not, `since=`/`until=` those taken in that time
    /// range, all newest first like the whole listing unless `after` says otherwise.
    ///
    /// The page is read on the catalog's reader (`CatalogReader`), written there, and answered
    /// from there to the loop; a long-poll waits on a task first, then reads the same way.
    func readPage(_ request: HTTPRequest, _ responder: HTTPResponder) throws {
        let query = try LibraryQuery(request)
        guard let wait = query.wait else { return readPage(request, query, responder) }
        Task {
            do {
                try await waitForPictures(query, seconds: wait)
                readPage(request, query, responder)
            } catch {
                responder.fail(error)
            }
        }
    }

    private func readPage(_ request: HTTPRequest, _ query: LibraryQuery, _ responder: HTTPResponder) {
        // Read before the rows: a change after this makes the page stored below stale at once.
        let generation = catalog.changeCounter
        let etag = listingETag(generation)
        if let notModified = Self.notModified(request, etag: etag) { return responder.respond(notModified) }
        let key = Self.cacheKey(request)
        catalog.reader.page(
            before: query.before, after: query.after, limit: Int(query.limit), jobID: query.job,
            label: query.label, keep: query.keep, takenSince: query.since, takenUntil: query.until
        ) { [pages] result in
            switch result {
            case .success(let page):
                var next: String?
                if page.hasMore, let last = page.items.last { next = query.next(after: last.id) }
                let body = Self.pageBody(page.items, next: next)
                pages.store(body, query: key, generation: generation)
                responder.respond(Self.page(body, etag: etag))
            case .failure(let error):
                responder.fail(error)
            }
        }
    }

    /// `{"items":[…],"next":…}` and a newline, written straight into one buffer: a page nobody
    /// asked for before (a script paging with `next`) is written once, and its 50 records built
    /// as strings, then joined, then converted, were half of its CPU.
    static func pageBody(_ records: [MediaRecord], next: String?) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(records.count * 330 + 64)
        body += #"{"items":["#.utf8
        for (index, record) in records.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            record.appendJSON(to: &body)
        }
        body += #"],"next":"#.utf8
        if let next { JSONBytes.appendString(next, to: &body) } else { body += "null".utf8 }
        body += "}\n".utf8
        return body
    }

    private static func page(_ body: [UInt8], etag: String) -> HTTPResponse {
        HTTPResponse(
            status: .ok,
            headers: ["Content-Type": "application/json", "ETag": etag, "Cache-Control": "no-cache"],
            body: .bytes(body))
    }

    /// The query as sent: two spellings of one query are two entries, which costs only room.
    private static func cacheKey(_ request: HTTPRequest) -> String {
        guard let mark = request.target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return "" }
        return String(request.target[mark...])
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

    /// `GET /library`'s answer when it needs no catalog: a `304` when the client's copy is
    /// current, or the page stored when the same query was last answered at this state.
    ///
    /// Polling is how scripts and the page watch the library, so the common answers are made
    /// on the event loop, without a task or the catalog's thread: the ETag is the catalog's
    /// change counter, an atomic. nil hands the request to `readPage`. The query is checked
    /// first, so a bad one gets its `400` either way.
    func answerOnTheLoop(_ request: HTTPRequest) throws -> HTTPResponse? {
        // A long-poll waits first, on its task; the 304 comes after the wait, if at all.
        guard try LibraryQuery(request).wait == nil else { return nil }
        let generation = catalog.changeCounter
        let etag = listingETag(generation)
        if let notModified = Self.notModified(request, etag: etag) { return notModified }
        guard let body = pages.page(query: Self.cacheKey(request), generation: generation) else { return nil }
        return Self.page(body, etag: etag)
    }

    /// The listing changes only when a picture is added, deleted or marked, so one counter
    /// validates every page and filter.
    private func listingETag(_ generation: UInt64) -> String {
        "W/\"\(catalog.instanceToken)-\(generation)\""
    }

    private static func notModified(_ request: HTTPRequest, etag: String) -> HTTPResponse? {
        guard let ifNoneMatch = request.headers["If-None-Match"],
            RepresentationValidators.list(ifNoneMatch, matches: etag, weak: true)
        else { return nil }
        return HTTPResponse(status: .notModified, headers: ["ETag": etag, "Cache-Control": "no-cache"])
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
