import ShutterAccess
import ShutterHTTP
import ShutterTestSupport
import Testing

@testable import ShutterAPI

/// Every route needs the scope docs/API.md promises: `view` reads, `snap` takes pictures and
/// starts jobs, `admin` deletes and changes; only `/healthz` needs none. A new route that is
/// not in this table fails here until someone decides its scope.
@Suite struct RouteScopesTests {
    static let expected: [String: AccessScope] = [
        "GET /healthz": .none, "GET /metrics": .view, "GET /openapi.json": .view,
        "GET /": .view, "GET /status": .view, "GET /cameras": .view, "GET /camera/controls": .view,
        "GET /library": .view, "GET /events": .view, "GET /library/{id}": .view, "GET /media/{id}.jpg": .view,
        "GET /preview.jpg": .view, "GET /preview.mjpg": .view, "GET /jobs": .view, "GET /jobs/{id}": .view,
        "POST /snap": .snap, "POST /jobs": .snap,
        "DELETE /library/{id}": .admin, "PATCH /library/{id}": .admin, "PATCH /camera/controls": .admin,
        "DELETE /jobs/{id}": .admin, "POST /links": .admin,
    ]

    @Test func everyRouteNeedsItsDocumentedScope() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let scopes = Dictionary(uniqueKeysWithValues: api.router.scopes.map { ($0.endpoint, $0.scope) })
            #expect(scopes == Self.expected)
        }
    }

    @Test func aLinkIsMadeForAPictureOrThePreviewOnly() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let made = await api.respond(
                .post, "/links", body: Array(#"{"path":"/media/7.jpg","expires_in":60}"#.utf8))
            #expect(made.status == .created)
            let json = made.text
            let expiry = api.clock.wallMillisecondsNow() / 1000 + 60
            let link = SignedLinks(key: Array(repeating: 3, count: 32)).link(
                path: "/media/7.jpg", expiresAt: expiry)
            #expect(json.contains(#""url":"\#(link)""#))
            #expect(json.contains(#""expires_at_unix":\#(expiry)"#))
            for body in [
                #"{"path":"/library"}"#, #"{"path":"/media/7.jpg","expires_in":0}"#,
                #"{"path":"/media/7.jpg","expires_in":99999999}"#, #"{"path":"/media/7.jpg","extra":1}"#,
                #"{"path":5}"#, "nonsense",
            ] {
                let refused = await api.respond(.post, "/links", body: Array(body.utf8))
                #expect(refused.status == .badRequest, "\(body)")
            }
        }
    }
}
