import FoundationEssentials
import ShutterHTTP

/// The fields of a `PATCH /library/{id}` body, each a boolean or nil when it is of another type.
///
/// Read field by field, so an unknown field or a wrong type can be named instead of failing the
/// whole body.
struct PicturePatch: Decodable {
    /// Every field of the object, by name.
    var fields: [String: Bool?] = [:]

    private struct FieldName: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: FieldName.self)
        for key in container.allKeys {
            fields[key.stringValue] = .some(try? container.decode(Bool.self, forKey: key))
        }
    }

    /// Parses `{"keep": true|false}`; any other field or type is a 400 that names it.
    static func decodeKeep(_ body: [UInt8]) throws -> Bool {
        let expected = #"send {"keep": true} or {"keep": false}"#
        try requireUniqueKeys(body)
        guard let patch = try? JSONDecoder().decode(PicturePatch.self, from: Data(body)) else {
            throw HTTPError(.badRequest, "invalid body", detail: "not a JSON object; \(expected)")
        }
        let unknown = patch.fields.keys.filter { $0 != "keep" }.sorted()
        guard unknown.isEmpty else {
            throw HTTPError(
                .badRequest, "unknown field",
                detail: "unknown field \(unknown.map { "'\($0)'" }.joined(separator: ", ")); \(expected)")
        }
        guard let field = patch.fields["keep"] else {
            throw HTTPError(.badRequest, "invalid body", detail: "keep is missing; \(expected)")
        }
        guard let keep = field else {
            throw HTTPError(.badRequest, "invalid field", detail: "keep must be true or false; \(expected)")
        }
        return keep
    }
}
