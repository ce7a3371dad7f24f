import ShutterHTTP
import ShutterTestSupport
import Testing

/// `GET /`: the page for browsers, the JSON index of every endpoint for everyone else.
@Suite struct IndexRouteTests {
    private let browserAccept =
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

    @Test func aBrowserGetsThePage() async throws {
        try await withTemporaryDirectory { directory in
            let response = try await TestAPI(directory: directory).respond(
                .get, "/", headers: ["Accept": browserAccept])
            #expect(response.status == .ok)
            #expect(response.headers["Content-Type"] == "text/html; charset=utf-8")
            #expect(response.text.hasPrefix("<!doctype html>"))
        }
    }

    @Test(arguments: [nil, "*/*", "application/json"])
    func everyoneElseGetsTheJSONIndex(accept: String?) async throws {
        try await withTemporaryDirectory { directory in
            let response = try await TestAPI(directory: directory).respond(
                .get, "/", headers: accept.map { ["Accept": $0] } ?? [:])
            #expect(response.status == .ok)
            #expect(response.headers["Content-Type"] == "application/json")
            #expect(response.headers["Vary"] == "Accept")
            #expect(response.text.contains(#""version":"9.9.9""#))
            // Every route of every resource, taken from the router itself.
            for endpoint in [
                "POST /snap", "GET /library", "GET /library/{id}", "DELETE /library/{id}",
                "PATCH /library/{id}",
                "GET /media/{id}.jpg", "GET /preview.jpg", "GET /preview.mjpg", "GET /healthz", "GET /status",
                "GET /cameras", "GET /camera/controls", "PATCH /camera/controls", "POST /jobs", "GET /jobs",
                "GET /jobs/{id}", "DELETE /jobs/{id}",
            ] {
                #expect(response.text.contains("\"\(endpoint)\""), "\(endpoint) missing")
            }
        }
    }
}
