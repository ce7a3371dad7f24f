import FoundationEssentials
import ShutterHTTP

/// The options of `POST /snap`, from the query (`?delay=5&wait=true`) or a JSON body
/// (`{"delay": 5, "wait": true}`), not both.
struct SnapOptions {
    /// The longest label, in UTF-8 bytes: the same bound as a job's.
    static let maximumLabelBytes = 200

    /// Seconds until the picture is taken, or nil to take it now.
    var delaySeconds: Double?
    /// Whether to answer with the picture once it is taken rather than with the job at once.
    var wait = false
    /// Accept a frame captured up to this long before the request (an instant answer when one
    /// is at hand), instead of waiting for the next frame.
    var maxAgeMilliseconds: Int?
    /// The label stored with the picture (and drawn for `{label}`); nil for none, as is an empty one.
    var label: String?

    /// Throws 400 for an unknown parameter or field, a malformed value, or options given twice.
    init(_ request: HTTPRequest) throws {
        let query = try QueryParameters(request, allowed: ["delay", "wait", "max_age_ms", "label"])
        let labelFromQuery = try query.text("label")
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
                        #"POST /snap takes no body, {} or {"delay": seconds, "wait": true|false, "max_age_ms": ms, "label": text}"#
                )
            }
            if let unknown = object.keys.sorted().first(where: {
                !["delay", "wait", "max_age_ms", "label"].contains($0)
            }) {
                throw HTTPError(
                    .badRequest, "unknown field",
                    detail: "unknown field `\(unknown)`; POST /snap accepts delay, wait, max_age_ms and label"
                )
            }
            body = object
        }
        if (delayText != nil && body["delay"] != nil) || (fromQuery != nil && body["wait"] != nil)
            || (maxAgeFromQuery != nil && body["max_age_ms"] != nil)
            || (labelFromQuery != nil && body["label"] != nil)
        {
            throw HTTPError(
                .badRequest, "repeated option",
                detail: "give each of delay, wait, max_age_ms and label in the query or in the body, not both"
            )
        }
        let label: String?
        switch body["label"] {
        case nil: label = labelFromQuery
        case .string(let value)?: label = value
        default: throw HTTPError(.badRequest, "invalid value", detail: "`label` must be a string")
        }
        if let label, label.utf8.count > Self.maximumLabelBytes {
            throw HTTPError(
                .badRequest, "invalid value",
                detail: "`label` must be at most \(Self.maximumLabelBytes) bytes long")
        }
        self.label = label?.isEmpty == true ? nil : label
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
