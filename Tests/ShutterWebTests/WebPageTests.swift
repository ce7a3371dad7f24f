import ShutterHTTP
import Testing

@testable import ShutterWeb

/// The page as served: built from the three resource files, with its headers and its policy.
@Suite struct WebPageTests {
    /// What Chromium sends when navigating.
    private let browserAccept =
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8"

    private func text(_ response: HTTPResponse) -> String {
        guard case .bytes(let bytes) = response.body else { return "" }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func thePageCarriesItsHeaders() {
        let response = WebPage.response(
            HTTPRequest(method: .get, target: "/", headers: ["Accept": browserAccept]))
        #expect(response.status == .ok)
        #expect(response.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(response.headers["Cache-Control"] == "no-cache")
        #expect(response.headers["Vary"] == "Accept")
        #expect(response.headers["X-Content-Type-Options"] == "nosniff")
        #expect(response.headers["Content-Security-Policy"] == WebPage.contentSecurityPolicy)
        #expect(response.headers["ETag"] == WebPage.etag)
        #expect(text(response).hasPrefix("<!doctype html>"))
        #expect(text(response).contains(#"id="preview""#))
    }

    @Test(arguments: [nil, "*/*", "application/json", "text/html;q=0", "application/json, text/html; q=0.0"])
    func onlyAnAcceptListingHTMLWantsThePage(accept: String?) {
        #expect(
            !WebPage.isWanted(
                by: HTTPRequest(method: .get, target: "/", headers: accept.map { ["Accept": $0] } ?? [:])))
    }

    @Test(arguments: ["text/html", "TEXT/HTML;level=1", "application/json;q=0.5, text/html;q=0.1"])
    func anyWeightAboveZeroAsksForThePage(accept: String) {
        #expect(WebPage.isWanted(by: HTTPRequest(method: .get, target: "/", headers: ["Accept": accept])))
    }

    @Test func theSameETagGetsA304WithoutTheBody() {
        for tag in [WebPage.etag, "W/" + WebPage.etag, "\"other\", " + WebPage.etag] {
            let response = WebPage.response(
                HTTPRequest(
                    method: .get, target: "/", headers: ["Accept": browserAccept, "If-None-Match": tag]))
            #expect(response.status == .notModified)
            #expect(response.body.count == 0)
            #expect(response.headers["ETag"] == WebPage.etag)
            #expect(response.headers["Vary"] == "Accept")
        }
        let stale = WebPage.response(
            HTTPRequest(
                method: .get, target: "/", headers: ["Accept": browserAccept, "If-None-Match": "\"stale\""]))
        #expect(stale.status == .ok)
    }

    /// The served document is index.html with app.js and style.css inlined where it links them.
    @Test func theDocumentIsTheResourceFilesWithScriptAndStyleInlined() {
        #expect(WebPage.script.hasPrefix("\"use strict\";"))
        #expect(WebPage.style.contains(":root"))
        #expect(WebPage.document.contains("<script>" + WebPage.script + "</script>"))
        #expect(WebPage.document.contains("<style>" + WebPage.style + "</style>"))
        #expect(!WebPage.document.contains(WebPage.scriptTag))
        #expect(!WebPage.document.contains(WebPage.styleLink))
        #expect(WebPage.document.ranges(of: "<script").count == 1)
        #expect(WebPage.document.ranges(of: "<style").count == 1)
    }

    @Test func thePolicyAllowsOnlyThePagesOwnScriptAndStyle() {
        let policy = WebPage.contentSecurityPolicy
        #expect(policy.hasPrefix("default-src 'self';"))
        #expect(!policy.contains("unsafe"))
        #expect(policy.contains("script-src '\(WebPage.hashSource(WebPage.script))';"))
        #expect(policy.contains("style-src '\(WebPage.hashSource(WebPage.style))';"))
        // The SHA-256 of nothing, as CSP writes it.
        #expect(WebPage.hashSource("") == "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=")
    }

    @Test func thePageFetchesNothingFromElsewhere() {
        #expect(!WebPage.document.contains("://"))
        #expect(!WebPage.document.contains("src=\"//"))
        #expect(!WebPage.document.contains("href=\"//"))
    }
}
