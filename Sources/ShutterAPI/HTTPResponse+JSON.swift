import ShutterHTTP

extension HTTPResponse {
    /// A JSON response with `status`.
    static func json(_ status: HTTPStatus = .ok, _ body: String, headers: HTTPHeaders = [:]) -> HTTPResponse {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array((body + "\n").utf8)))
    }
}
