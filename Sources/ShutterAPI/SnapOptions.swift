import FoundationEssentials
import ShutterHTTP

/// The options of `POST /snap`, from the query (`?delay=5&wait=true`) or a JSON body
/// (`{"delay": 5, "wait": true}`), not both.
struct SnapOptions {
    /// Seconds until the picture is taken, or nil to take it now.
    var delaySeconds: Double?
    /// Whether to answer with the picture once it is taken rather than with the job at once.
    var wait = false
    /// Accept a frame captured up to this long before the request (an instant answer when one
    /// is at hand), instead of waiting for the next frame.
    var maxAgeMilliseconds: Int?

    /// Throws 400 for an unknown parameter or field, a malformed value, or options given twice.
    init(_ request: HTTPRequest) throws {
        let query = try QueryParameters(request, allowed: ["delay", "wait", "max_age_ms"])
        let fromQuery = try query.boolean("wait")
        let delayText = try query.text("delay")
        let maxAgeFromQuery = try query.integer("max_age_ms", in: 0...60000)
        let compact = String(decoding: request.body, as: UTF8.self).filter { !$0.isWhitespace }
        var body: [String: JSONValue] = [:]
        if !compact.isEmpty, compact != "{}" {
            try requireUniqueKeys(request.body)
            guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(request.body))
            else {
                throw HTTPError(
                    .badRequest, "unexpected body",
                    detail:
                        #"POST /snap takes no body, {} or {"delay": seconds, "wait": true|false, "max_age_ms": ms}"#
                )
            }
            if let unknown = object.keys.sorted().first(where: {
                !["delay", "wait", "max_age_ms"].contains($0)
            }) {
                throw HTTPError(
                    .badRequest, "unknown field",
                    detail: "unknown field `\(unknown)`; POST /snap accepts delay, wait and max_age_ms")
            }
            body = object
        }
        if (delayText != nil && body["delay"] != nil) || (fromQuery != nil && body["wait"] != nil)
            || (maxAgeFromQuery != nil && body["max_age_ms"] != nil)
        {
            throw HTTPError(
                .badRequest, "repeated option",
                detail: "give each of delay, wait and max_age_ms in the query or in the body, not both")
        }
        switch body["max_age_ms"] {
        case nil: maxAgeMilliseconds = maxAgeFromQuery.map { Int($0) }
        case let value?:
            guard let milliseconds = value.integer, (0...60000).contains(milliseconds) else {
                throw HTTPError(
                    .badRequest, "invalid value",
                    detail: "`max_age_ms` must be a whole number from 0 to 60000")
            }
            maxAgeMilliseconds = milliseconds
        }
        switch body["wait"] {
        case nil: wait = fromQuery ?? false
        case .bool(let value)?: wait = value
        default: throw HTTPError(.badRequest, "invalid value", detail: "`wait` must be true or false")
        }
        let delay: Double?
        switch body["delay"] {
        case nil: delay = delayText.map { QueryParameters.decimal($0) ?? .nan }
        case .number(let value)?: delay = value
        default: delay = .nan
        }
        if let delay, !delay.isFinite || delay < 0 {
            throw HTTPError(
                .badRequest, "invalid value", detail: "`delay` must be a non-negative number of seconds")
        }
        delaySeconds = delay
    }
}
