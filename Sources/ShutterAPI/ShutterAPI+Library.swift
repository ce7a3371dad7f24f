import FoundationEssentials
import ShutterCatalog
import ShutterHTTP

extension ShutterAPI {
    /// Largest page `GET /library` serves.
    static let maximumPageSize: Int64 = 500

    /// `GET /library`: a page of records, newest first; `after=` pages forward in the order taken;
    /// `job=` lists that job's pictures, in the order taken.
    func library(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = try QueryParameters(request, allowed: ["limit", "before", "after", "job"])
        let limit = try query.integer("limit", in: 1...Self.maximumPageSize) ?? 50
        let before = try query.integer("before", in: 1...Int64.max)
        let job = try query.integer("job", in: 1...Int64.max)
        // A job's pictures read in the order taken, so its listing pages forward from the start.
        let after = try query.integer("after", in: 0...Int64.max) ?? (job != nil ? 0 : nil)

        // The listing changes only when a picture is added or deleted, so one counter
        // validates every page: pollers get a 304 without touching the database.
        let etag = "W/\"\(catalog.instanceToken)-\(await catalog.changeCounter)\""
        if let ifNoneMatch = request.headers["If-None-Match"],
            RepresentationValidators.list(ifNoneMatch, matches: etag, weak: true)
        {
            return HTTPResponse(status: .notModified, headers: ["ETag": etag, "Cache-Control": "no-cache"])
        }
        let page = try await catalogPage(before: before, after: after, limit: Int(limit), job: job)
        var items = "["
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
            next = link + "&limit=\(limit)"
        }
        object.field("next", next)
        return .json(.ok, object.finished(), headers: ["ETag": etag, "Cache-Control": "no-cache"])
    }

    /// `GET /library/{id}`: one record.
    func picture(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try pictureID(parameters)
        _ = try QueryParameters(request, allowed: [])
        guard let record = try await catalog.record(id: id) else { throw notFound(id) }
        return .json(.ok, record.json)
    }

    /// `DELETE /library/{id}`: removes the record and its file.
    func deletePicture(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try pictureID(parameters)
        _ = try QueryParameters(request, allowed: [])
        try requireEmptyBody(request)
        guard try await catalog.delete(id: id) else { throw notFound(id) }
        return HTTPResponse(status: .noContent)
    }

    /// `PATCH /library/{id}` with `{"keep": true|false}`: marks the picture as kept by retention (or
    /// not) and answers with the record.
    func patchPicture(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try pictureID(parameters)
        _ = try QueryParameters(request, allowed: [])
        let keep = try Self.decodeKeep(request.body)
        guard let record = try await catalog.setKeep(id: id, keep: keep) else { throw notFound(id) }
        return .json(.ok, record.json)
    }

    /// Parses `{"keep": true|false}`; any other field or type is a 400 that names it.
    static func decodeKeep(_ body: [UInt8]) throws -> Bool {
        let expected = #"send {"keep": true} or {"keep": false}"#
        guard let patch = try? JSONDecoder().decode(PicturePatch.self, from: Data(body)) else {
            throw HTTPError(.badRequest, "invalid body", detail: "not a JSON object; \(expected)")
        }
        let unknown = patch.fields.keys.filter { $0 != "keep" }.sorted()
        guard unknown.isEmpty else {
            throw HTTPError(
                .badRequest, "unknown field",
                detail: "unknown field \(unknown.map { "'\($0)'" }.joined(separator: ", ")); \(expected)")
        }
        guard let field = patch.fields["keep"] else {
            throw HTTPError(.badRequest, "invalid body", detail: "keep is missing; \(expected)")
        }
        guard let keep = field else {
            throw HTTPError(.badRequest, "invalid field", detail: "keep must be true or false; \(expected)")
        }
        return keep
    }

    private func catalogPage(before: Int64?, after: Int64?, limit: Int, job: Int64?) async throws -> MediaPage
    {
        do {
            return try await catalog.page(before: before, after: after, limit: limit, jobID: job)
        } catch CatalogError.invalidArgument(let detail) {
            throw HTTPError(.badRequest, "invalid parameter", detail: detail)
        }
    }

    func notFound(_ id: Int64) -> HTTPError {
        HTTPError(.notFound, detail: "no picture with id \(id)")
    }
}

/// The fields of a `PATCH /library/{id}` body, each a boolean or nil when it is of another type.
///
/// Read field by field, so an unknown field or a wrong type can be named instead of failing the
/// whole body.
struct PicturePatch: Decodable {
    /// Every field of the object, by name.
    var fields: [String: Bool?] = [:]

    private struct FieldName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: FieldName.self)
        for key in container.allKeys {
            fields[key.stringValue] = .some(try? container.decode(Bool.self, forKey: key))
        }
    }
}
