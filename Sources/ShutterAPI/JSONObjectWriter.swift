import ShutterHTTP

/// Builds a JSON object field by field, in a fixed order, without an encoder's
/// reflection: responses are small and hot (`/library` is polled).
struct JSONObjectWriter {
    private(set) var text = "{"
    private var first = true

    private mutating func key(_ name: String) {
        if !first { text += "," }
        first = false
        text += "\"\(name)\":"
    }

    mutating func field(_ name: String, _ value: String?) {
        key(name)
        text += value.map(JSONString.quote) ?? "null"
    }

    mutating func field(_ name: String, _ value: Int64?) {
        key(name)
        text += value.map { String($0) } ?? "null"
    }

    mutating func field(_ name: String, _ value: Int) {
        key(name)
        text += String(value)
    }

    mutating func field(_ name: String, _ value: UInt64) {
        key(name)
        text += String(value)
    }

    mutating func field(_ name: String, _ value: Double?) {
        key(name)
        text += value.map { $0.isFinite ? String($0) : "null" } ?? "null"
    }

    mutating func field(_ name: String, _ value: Bool) {
        key(name)
        text += value ? "true" : "false"
    }

    /// A field whose value is already JSON (a nested object or array).
    mutating func rawField(_ name: String, _ json: String) {
        key(name)
        text += json
    }

    /// The finished object.
    func finished() -> String { text + "}" }
}

extension HTTPResponse {
    /// A JSON response with `status`.
    static func json(_ status: HTTPStatus = .ok, _ body: String, headers: HTTPHeaders = [:]) -> HTTPResponse {
        var headers = headers
        headers.replaceOrAdd(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: status, headers: headers, body: .bytes(Array((body + "\n").utf8)))
    }
}
