/// Finds a key given twice in one JSON object, which `JSONDecoder` accepts silently (the first
/// value wins), so `{"delay": 5, "delay": -1}` would pass as a delay of 5.
///
/// RFC 8259 §4 says names within an object "SHOULD be unique" and leaves duplicates'
/// meaning to the implementation; every body Shutter reads refuses them instead, naming the key.
public enum JSONDuplicateKeys {
    /// The first key that appears twice in the same object (compared after unescaping, so
    /// `"a"` and `"\u0061"` are the same key), or nil. Malformed JSON gives nil: the decoder
    /// that runs next refuses it with its own message.
    public static func first(in json: [UInt8]) -> String? {
        // One entry per open container: the keys seen so far for an object, nil for an array.
        // An explicit stack rather than recursion, so a deeply nested body cannot overflow ours.
        var containers: [Set<String>?] = []
        var expectingKey = false
        var index = 0
        while index < json.count {
            let byte = json[index]
            switch byte {
            case UInt8(ascii: "{"):
                containers.append([])
                expectingKey = true
                index += 1
            case UInt8(ascii: "["):
                containers.append(nil)
                expectingKey = false
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                guard containers.popLast() != nil else { return nil }
                expectingKey = false
                index += 1
            case UInt8(ascii: ","):
                if let top = containers.last { expectingKey = top != nil }
                index += 1
            case UInt8(ascii: "\""):
                guard let (text, end) = string(in: json, from: index + 1) else { return nil }
                index = end
                if expectingKey, var keys = containers.last ?? nil {
                    if keys.contains(text) { return text }
                    keys.insert(text)
                    containers[containers.count - 1] = keys
                    expectingKey = false
                }
            default:
                // Whitespace, `:`, numbers and literals carry no keys.
                index += 1
            }
        }
        return nil
    }

    /// Decodes the string whose contents start at `start` (just after its opening quote);
    /// returns it and the index after its closing quote, or nil if it never closes or an
    /// escape is malformed.
    private static func string(in json: [UInt8], from start: Int) -> (String, Int)? {
        var bytes: [UInt8] = []
        var index = start
        while index < json.count {
            let byte = json[index]
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                return (String(decoding: bytes, as: UTF8.self), index)
            case UInt8(ascii: "\\"):
                guard index < json.count else { return nil }
                let escape = json[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(escape)
                case UInt8(ascii: "b"): bytes.append(0x08)
                case UInt8(ascii: "f"): bytes.append(0x0C)
                case UInt8(ascii: "n"): bytes.append(0x0A)
                case UInt8(ascii: "r"): bytes.append(0x0D)
                case UInt8(ascii: "t"): bytes.append(0x09)
                case UInt8(ascii: "u"):
                    guard let unit = hex4(json, at: index) else { return nil }
                    index += 4
                    var scalar = UInt32(unit)
                    // A UTF-16 surrogate pair, written as two escapes (RFC 8259 §7).
                    if (0xD800...0xDBFF).contains(unit), index + 1 < json.count,
                        json[index] == UInt8(ascii: "\\"), json[index + 1] == UInt8(ascii: "u"),
                        let low = hex4(json, at: index + 2), (0xDC00...0xDFFF).contains(low)
                    {
                        index += 6
                        scalar = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
                    }
                    bytes.append(contentsOf: Array(String(Unicode.Scalar(scalar) ?? "\u{FFFD}").utf8))
                default: return nil
                }
            default:
                bytes.append(byte)
            }
        }
        return nil
    }

    private static func hex4(_ json: [UInt8], at index: Int) -> UInt16? {
        guard index + 4 <= json.count else { return nil }
        var value: UInt16 = 0
        for byte in json[index..<index + 4] {
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: return nil
            }
            value = value << 4 | UInt16(digit)
        }
        return value
    }
}
