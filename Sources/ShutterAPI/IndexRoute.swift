import ShutterHTTP
import ShutterSystem
import ShutterWeb

/// `GET /`: the web page for a browser, the list of endpoints for everyone else.
struct IndexRoute: Sendable {
    /// Every other endpoint, as `METHOD /pattern`.
    let endpoints: [String]
    let version: String

    func register(in router: inout Router) {
        router.add(.get, "/", scope: .view, .immediate { request, _ in try index(request) })
    }

    /// The web page for a browser (an `Accept` listing `text/html`), otherwise what this server
    /// offers as JSON, so curl and scripts keep getting the list of endpoints.
    func index(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        if WebPage.isWanted(by: request) { return WebPage.response(request) }
        var object = JSONObjectWriter()
        object.field("service", "shutterd")
        object.field("version", version)
        object.rawField("endpoints", "[" + endpoints.map(JSONString.quote).joined(separator: ",") + "]")
        // Caches must not hand this to a browser that asked for the page, nor the page to curl.
        return .json(.ok, object.finished(), headers: ["Vary": "Accept"])
    }
}
