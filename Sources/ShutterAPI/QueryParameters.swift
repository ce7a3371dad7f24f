import ShutterHTTP

/// The query parameters of a request, checked against the names an endpoint accepts.
struct QueryParameters {
    private let values: [String: String]

    /// Throws 400 naming any parameter the endpoint does not know, that appears twice, or whose
    /// percent-encoding is malformed or not UTF-8 (a pair that cannot be read is not ignored).
    init(_ request: HTTPRequest, allowed: Set<String>) throws {
        var values: [String: String] = [:]
        for (rawName, rawValue) in request.rawQuery {
            guard let name = PercentEncoding.decode(rawName, plusAsSpace: true) else {
                throw HTTPError(
                    .badRequest, "unknown parameter",
                    detail:
                        "query parameter '\(rawName)' is not valid percent-encoded UTF-8; accepted: \(Self.describe(allowed))"
                )
            }
            guard let value = PercentEncoding.decode(rawValue, plusAsSpace: true) else {
                throw HTTPError(
                    .badRequest, "invalid parameter",
                    detail: "the value of query parameter '\(name)' is not valid percent-encoded UTF-8")
            }
            guard allowed.contains(name) else {
                throw HTTPError(
                    .badRequest, "unknown parameter",
                    detail: "unknown query parameter '\(name)'; accepted: \(Self.describe(allowed))")
            }
            guard values[name] == nil else {
                throw HTTPError(
                    .badRequest, "repeated parameter", detail: "query parameter '\(name)' is given twice")
            }
            values[name] = value
        }
        self.values = values
    }

    private static func describe(_ allowed: Set<String>) -> String {
        allowed.isEmpty ? "none" : allowed.sorted().joined(separator: ", ")
    }

    /// Reads a plain decimal number (`5`, `0.25`, `-1`): Swift's `Double(_:)` also takes hex
    /// (`0x5`), exponents, `inf` and `nan`, which no client means in a query.
    static func decimal(_ text: String) -> Double? {
        var digitsBeforePoint = 0
        var digitsAfterPoint = 0
        var seenPoint = false
        for (offset, byte) in text.utf8.enumerated() {
            switch byte {
            case UInt8(ascii: "-") where offset == 0: continue
            case UInt8(ascii: "."):
                guard !seenPoint else { return nil }
                seenPoint = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if seenPoint { digitsAfterPoint += 1 } else { digitsBeforePoint += 1 }
            default: return nil
            }
        }
        guard digitsBeforePoint > 0, !seenPoint || digitsAfterPoint > 0 else { return nil }
        return Double(text)
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

    /// A boolean parameter spelled exactly `true` or `false`, or nil if absent; 400 otherwise.
    func strictBoolean(_ name: String) throws -> Bool? {
        guard let text = values[name] else { return nil }
        switch text {
        case "true": return true
        case "false": return false
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
        guard let value = Self.decimal(text), value.isFinite, range.contains(value) else {
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
        // The same spelling as `number`'s, without a fraction (`Int64` alone also takes `+5`):
        // checked byte by byte, since every `/library` request reads a few of these.
        let bytes = text.utf8
        let digits = bytes.first == UInt8(ascii: "-") ? bytes.dropFirst() : bytes[...]
        guard !digits.isEmpty, digits.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
            let value = Int64(text), range.contains(value)
        else {
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
