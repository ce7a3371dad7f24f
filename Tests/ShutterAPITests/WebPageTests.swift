import FoundationEssentials
import ShutterCatalog
import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterAPI

/// `GET /`: the page for browsers, the JSON index for everyone else, and the page's headers.
@Suite struct WebPageTests {
    private let quiet = Logger(label: "test", level: .critical)
    /// What Chromium sends when navigating.
    private let browserAccept =
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

    /// `GET /` answered by the real router, with a camera that is never started.
    private func index(headers: HTTPHeaders) async throws -> HTTPResponse {
        try await withTemporaryDirectory { directory in
            let api = ShutterAPI(
                capture: try CaptureService(source: FakeCameraSource(), quality: 80, logger: quiet),
                catalog: try MediaCatalog(dataDirectory: directory, logger: quiet), cameraPath: nil,
                configuration: ShutterConfiguration(), logger: quiet)
            guard
                case .handler(.immediate(let handler), let parameters) = api.router().resolve(
                    method: .get, path: "/")
            else {
                Issue.record("GET / is not an immediate route")
                return HTTPResponse(status: .internalServerError)
            }
            return try handler(HTTPRequest(method: .get, target: "/", headers: headers), parameters)
        }
    }

    private func text(_ response: HTTPResponse) -> String {
        guard case .bytes(let bytes) = response.body else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func aBrowserGetsThePage() async throws {
        let response = try await index(headers: ["Accept": browserAccept])
        #expect(response.status == .ok)
        #expect(response.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(response.headers["Cache-Control"] == "no-cache")
        #expect(response.headers["Vary"] == "Accept")
        #expect(response.headers["X-Content-Type-Options"] == "nosniff")
        #expect(response.headers["ETag"] == WebPage.etag)
        #expect(text(response).hasPrefix("<!doctype html>"))
        #expect(text(response).contains(#"id="preview""#))
    }

    @Test(arguments: [nil, "*/*", "application/json", "text/html;q=0", "application/json, text/html; q=0.0"])
    func everyoneElseGetsTheJSONIndex(accept: String?) async throws {
        let response = try await index(headers: accept.map { ["Accept": $0] } ?? [:])
        #expect(response.status == .ok)
        #expect(response.headers["Content-Type"] == "application/json")
        #expect(response.headers["Vary"] == "Accept")
        #expect(text(response).contains(#""endpoints":["#))
    }

    @Test(arguments: ["text/html", "TEXT/HTML;level=1", "application/json;q=0.5, text/html;q=0.1"])
    func anyWeightAboveZeroAsksForThePage(accept: String) {
        #expect(WebPage.isWanted(by: HTTPRequest(method: .get, target: "/", headers: ["Accept": accept])))
    }

    @Test func theSameETagGetsA304WithoutTheBody() async throws {
        for tag in [WebPage.etag, "W/" + WebPage.etag, "\"other\", " + WebPage.etag] {
            let response = try await index(headers: ["Accept": browserAccept, "If-None-Match": tag])
            #expect(response.status == .notModified)
            #expect(response.body.count == 0)
            #expect(response.headers["ETag"] == WebPage.etag)
            #expect(response.headers["Vary"] == "Accept")
        }
        let stale = try await index(headers: ["Accept": browserAccept, "If-None-Match": "\"stale\""])
        #expect(stale.status == .ok)
    }

    @Test func thePolicyAllowsOnlyThePagesOwnScriptAndStyle() throws {
        let policy = WebPage.contentSecurityPolicy
        #expect(policy.hasPrefix("default-src 'self';"))
        #expect(!policy.contains("unsafe"))
        #expect(policy.contains("script-src '\(WebPage.hashSource(WebPage.script))';"))
        #expect(policy.contains("style-src '\(WebPage.hashSource(WebPage.style))';"))
        // The hash is of exactly what sits between the tags.
        #expect(WebPage.document.contains("<script>" + WebPage.script + "</script>"))
        #expect(WebPage.document.contains("<style>" + WebPage.style + "</style>"))
        #expect(WebPage.document.ranges(of: "<script").count == 1)
        #expect(WebPage.document.ranges(of: "<style").count == 1)
        // The SHA-256 of nothing, as CSP writes it.
        #expect(WebPage.hashSource("") == "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
    }

    @Test func thePageFetchesNothingFromElsewhere() {
        #expect(!WebPage.document.contains("://"))
        #expect(!WebPage.document.contains("src=\"//"))
        #expect(!WebPage.document.contains("href=\"//"))
    }
}
