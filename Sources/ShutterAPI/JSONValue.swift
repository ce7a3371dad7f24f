import FoundationEssentials

/// A JSON scalar from a config file or a request body.
public enum JSONValue: Decodable, Sendable {
    case string(String)
    case number(Double)
    case bool(Bool)

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    /// The value as a whole number: an integral number, or a boolean as 1 or 0.
    public var integer: Int? {
        switch self {
        case .bool(let bool): return bool ? 1 : 0
        case .number(let number): return number == number.rounded() && abs(number) < 1e9 ? Int(number) : nil
        case .string: return nil
        }
    }

    /// The value as the text the configuration key readers parse.
    public var text: String {
        switch self {
        case .string(let text): return text
        case .bool(let bool): return String(bool)
        case .number(let number):
            return number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number)
        }
    }
}
