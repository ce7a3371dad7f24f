import ShutterSystem

/// An error that knows how to answer a client: its status and a message safe to show.
///
/// Handlers throw these for bad input; any other error is logged and becomes a
/// 500 that reveals nothing of the server's internals (the hummingbird habit).
public protocol HTTPResponseError: Error {
    var status: HTTPStatus { get }
    /// A short machine-friendly summary, such as `"not found"`.
    var error: String { get }
    /// One sentence saying what was wrong and what would be accepted.
    var detail: String { get }
    /// Extra headers, such as `Allow` for 405.
    var headers: HTTPHeaders { get }
}

extension HTTPResponseError {
    public var headers: HTTPHeaders { [:] }

    /// The JSON response `{"error": ..., "detail": ...}` for this error.
    public func response() -> HTTPResponse {
        var headers = self.headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        let body = "{\"error\":\(JSONString.quote(error)),\"detail\":\(JSONString.quote(detail))}\n"
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array(body.utf8)))
    }
}

/// A plain `HTTPResponseError` for the common cases.
public struct HTTPError: HTTPResponseError, Sendable, Equatable {
    public let status: HTTPStatus
    public let error: String
    public let detail: String
    public let headers: HTTPHeaders

    public init(_ status: HTTPStatus, _ error: String? = nil, detail: String, headers: HTTPHeaders = [:]) {
        self.status = status
        self.error = error ?? status.reason.lowercased()
        self.detail = detail
        self.headers = headers
    }
}
