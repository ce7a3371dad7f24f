import FoundationEssentials
import ShutterAccess
import ShutterHTTP
import ShutterSystem

/// `POST /links`: signed links that grant `view` for one picture or the preview until they
/// expire, for embedding in a page or sharing without a token.
struct LinkRoutes: Sendable {
    let links: SignedLinks
    let clock: any Clock

    /// A link lives this long unless the request says otherwise.
    static let defaultLifetimeSeconds: Int64 = 3600

    func register(in router: inout Router) {
        router.add(.post, "/links", scope: .admin, .immediate { request, _ in try makeLink(request) })
    }

    /// `{"path": "/media/12.jpg", "expires_in": 3600}` → `201` with the link.
    func makeLink(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        let expected =
            #"send {"path": "/media/{id}.jpg" or "/preview.mjpg" or "/preview.jpg", "expires_in": SECONDS}"#
        // Which of two paths or lifetimes would be signed is the decoder's choice, not the client's.
        try requireUniqueKeys(request.body)
        guard let fields = try? JSONDecoder().decode([String: JSONValue].self, from: Data(request.body))
        else {
            throw HTTPError(.badRequest, "invalid body", detail: "not a JSON object; \(expected)")
        }
        let unknown = fields.keys.filter { $0 != "path" && $0 != "expires_in" }.sorted()
        guard unknown.isEmpty else {
            throw HTTPError(
                .badRequest, "unknown field",
                detail: "unknown field \(unknown.map { "'\($0)'" }.joined(separator: ", ")); \(expected)")
        }
        guard case .string(let path) = fields["path"] else {
            throw HTTPError(.badRequest, "invalid field", detail: "path must be a string; \(expected)")
        }
        guard SignedLinks.isLinkable(path) else {
            throw HTTPError(
                .badRequest, "invalid field",
                detail:
                    "links can be made for /media/{id}.jpg, /preview.mjpg and /preview.jpg, not '\(path.prefix(200))'"
            )
        }
        var lifetime = Self.defaultLifetimeSeconds
        if let value = fields["expires_in"] {
            let maximum = SignedLinks.maximumLifetimeSeconds
            guard case .number(let number) = value, let seconds = Int64(exactly: number),
                (1...maximum).contains(seconds)
            else {
                throw HTTPError(
                    .badRequest, "invalid field",
                    detail: "expires_in must be whole seconds from 1 to \(maximum)")
            }
            lifetime = seconds
        }
        let expiresAt = clock.wallMillisecondsNow() / 1000 + lifetime
        let url = links.link(path: path, expiresAt: expiresAt)
        var json = JSONObjectWriter()
        json.field("url", url)
        json.field("path", path)
        json.field("expires_at", Timestamp.iso8601(millisecondsSince1970: expiresAt * 1000))
        json.field("expires_at_unix", expiresAt)
        return .json(.created, json.finished(), headers: ["Cache-Control": "no-store"])
    }
}
