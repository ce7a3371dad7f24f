import ShutterHTTP

/// The query parameters of a request, checked against the names an endpoint accepts.
struct QueryParameters {
    private let values: [String: String]

    /// Throws 400 naming any parameter the endpoint does not know or that appears twice.
    init(_ request: HTTPRequest, allowed: Set<String>) throws {
        var values: [String: String] = [:]
        for (name, value) in request.query {
            guard allowed.contains(name) else {
                let accepted = allowed.isEmpty ? "none" : allowed.sorted().joined(separator: ", ")
                throw HTTPError(
                    .badRequest, "unknown parameter",
                    detail: "unknown query parameter '\(name)'; accepted: \(accepted)")
            }
            guard values[name] == nil else {
                throw HTTPError(
                    .badRequest, "repeated parameter", detail: "query parameter '\(name)' is given twice")
            }
            values[name] = value
        }
        self.values = values
    }

    /// A boolean parameter (`true`/`false`, `1`/`0`), or nil if absent; 400 if it is anything else.
    func boolean(_ name: String) throws -> Bool? {
        guard let text = values[name] else { return nil }
        switch text.lowercased() {
        case "true", "1", "yes": return true
        case "false", "0", "no": return false
        default:
            throw HTTPError(
                .badRequest, "invalid parameter", detail: "\(name) must be true or false, not '\(text)'")
        }
    }

    /// A parameter's text as sent, or nil if absent.
    func text(_ name: String) throws -> String? {
        values[name]
    }

    /// A number (fractions allowed) within `range`, or nil if absent; 400 if malformed or out of range.
    func number(_ name: String, in range: ClosedRange<Double>) throws -> Double? {
        guard let text = values[name] else { return nil }
        guard let value = Double(text), value.isFinite, range.contains(value) else {
            throw HTTPError(
                .badRequest, "invalid parameter",
                detail:
                    "\(name) must be a number from \(range.lowerBound) to \(range.upperBound), not '\(text)'")
        }
        return value
    }

    /// An integer parameter within `range`, or nil if absent; 400 if malformed or out of range.
    func integer(_ name: String, in range: ClosedRange<Int64>) throws -> Int64? {
        guard let text = values[name] else { return nil }
        guard let value = Int64(text), range.contains(value) else {
            throw HTTPError(
                .badRequest, "invalid parameter",
                detail:
                    "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(text)'"
            )
        }
        return value
    }
}

/// Rejects a request body on an endpoint that takes none (400).
func requireEmptyBody(_ request: HTTPRequest) throws {
    guard request.body.isEmpty else {
        throw HTTPError(
            .badRequest, "unexpected body",
            detail: "\(request.method) \(request.path ?? "") takes no request body")
    }
}
