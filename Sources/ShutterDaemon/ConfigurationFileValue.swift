import FoundationEssentials
import ShutterAPI

/// A value of the config file: a scalar, or a list or object (the `webhooks` list), which is
/// handed to its key as JSON text, the way its environment variable would give it.
enum ConfigurationFileValue: Decodable {
    case scalar(JSONValue)
    case structured(String)

    init(from decoder: any Decoder) throws {
        if let scalar = try? JSONValue(from: decoder) {
            self = .scalar(scalar)
        } else {
            let tree = try JSONTree(from: decoder)
            self = .structured(String(decoding: try JSONEncoder().encode(tree), as: UTF8.self))
        }
    }

    /// The text the key's reader parses.
    var text: String {
        switch self {
        case .scalar(let value): value.text
        case .structured(let json): json
        }
    }
}

/// Any JSON value, decoded and encoded again unchanged in meaning.
private indirect enum JSONTree: Codable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case array([JSONTree])
    case object([String: JSONTree])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else if let array = try? container.decode([JSONTree].self) {
            self = .array(array)
        } else {
            self = .object(try container.decode([String: JSONTree].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let bool): try container.encode(bool)
        case .number(let number): try container.encode(number)
        case .string(let string): try container.encode(string)
        case .array(let array): try container.encode(array)
        case .object(let object): try container.encode(object)
        }
    }
}
