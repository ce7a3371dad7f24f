import FoundationEssentials
import ShutterHTTP
import ShutterSystem

/// The web page at `/`: live preview with an overlay, the toolbar (Snap, Delayed, Start/Stop,
/// Library) and the gallery, in one document embedded in the binary.
///
/// The page is three real files under `Resources/` (`index.html`, `app.js`, `style.css`), compiled
/// into the binary by SwiftPM (`.embedInCode`), so they can be edited, diffed and checked as what
/// they are; `index.html` links the other two, and opens as it is from the folder while editing.
/// The served document has the script and style inlined in place of those links, so the
/// `Content-Security-Policy` allows exactly those two by their SHA-256 hashes (CSP Level 3,
/// "hash-source") and no other script at all. No framework and nothing fetched from elsewhere:
/// the page talks to the same JSON API as curl does.
public enum WebPage {
    /// `app.js`, exactly as inlined (its hash is in the policy).
    static let script = String(decoding: PackageResources.app_js, as: UTF8.self)
    /// `style.css`, exactly as inlined.
    static let style = String(decoding: PackageResources.style_css, as: UTF8.self)

    /// The tags in `index.html` that the inlined style and script replace.
    static let styleLink = #"<link rel="stylesheet" href="style.css">"#
    static let scriptTag = #"<script src="app.js"></script>"#

    /// The served document: `index.html` with the style and script spliced in verbatim, so their
    /// hashes match.
    static let document: String = {
        let template = String(decoding: PackageResources.index_html, as: UTF8.self)
        // A page edited so that a link is gone or doubled would be served without its script,
        // or with one the policy blocks: refuse to serve it at all. This runs when the page is
        // first served, which the unit tests do, so such an edit fails the tests, not a user.
        precondition(
            template.ranges(of: styleLink).count == 1 && template.ranges(of: scriptTag).count == 1,
            "index.html must link style.css and app.js exactly once each")
        return
            template
            .replacing(styleLink, with: "<style>" + style + "</style>")
            .replacing(scriptTag, with: "<script>" + script + "</script>")
    }()

    /// The document, encoded once.
    static let bytes: [UInt8] = Array(document.utf8)

    /// A strong entity tag: the bytes change only with a new build.
    static let etag = "\"" + SHA256.hexDigest(bytes).prefix(32) + "\""

    /// Only this document's own script and style run; images, fetches and the stream come from
    /// this server (`blob:` for the frame-by-frame preview fallback, `data:` for the empty icon
    /// that stops browsers asking for `/favicon.ico`).
    static let contentSecurityPolicy =
        "default-src 'self'; script-src '\(hashSource(script))'; style-src '\(hashSource(style))'; "
        + "img-src 'self' blob: data:; object-src 'none'; base-uri 'none'; form-action 'none'; "
        + "frame-ancestors 'none'"

    /// Whether the request's `Accept` lists `text/html` with a weight above zero (RFC 9110
    /// §12.5.1), as a browser's navigation does; `*/*` alone (curl) and `application/json` do not.
    public static func isWanted(by request: HTTPRequest) -> Bool {
        request.headers.values("Accept").contains { value in
            value.split(separator: ",").contains { element in
                let parts = element.split(separator: ";")
                guard let type = parts.first?.trimmingSpaces(), type.caseInsensitiveEquals("text/html")
                else { return false }
                for parameter in parts.dropFirst() {
                    let pair = parameter.split(separator: "=", maxSplits: 1)
                    if pair.count == 2, pair[0].trimmingSpaces().caseInsensitiveEquals("q") {
                        return (Double(pair[1].trimmingSpaces()) ?? 0) > 0
                    }
                }
                return true
            }
        }
    }

    /// The page, or `304` when `If-None-Match` names this build's page.
    public static func response(_ request: HTTPRequest) -> HTTPResponse {
        // Revalidated on every load (no-cache), so a new daemon's page is never stale; `Vary`
        // because the same URL answers JSON to clients that do not ask for HTML.
        var headers: HTTPHeaders = [
            "ETag": etag,
            "Cache-Control": "no-cache",
            "Vary": "Accept",
        ]
        if let ifNoneMatch = request.headers["If-None-Match"],
            RepresentationValidators.list(ifNoneMatch, matches: etag, weak: true)
        {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
        headers.add(name: "Content-Security-Policy", value: contentSecurityPolicy)
        headers.add(name: "X-Content-Type-Options", value: "nosniff")
        headers.add(name: "Referrer-Policy", value: "no-referrer")
        return HTTPResponse(status: .ok, headers: headers, body: .bytes(bytes))
    }

    /// `sha256-<base64>` of `text` as UTF-8, the form CSP matches an inline element's content against.
    static func hashSource(_ text: String) -> String {
        "sha256-" + Data(SHA256.digest(Array(text.utf8))).base64EncodedString()
    }
}
