/// JSON string quoting (RFC 8259 §7) for the few bodies built without an encoder.
public enum JSONString {
    public static func quote(_ text: String) -> String {
        // Most text (hashes, times, names, paths) has nothing to escape: then it is copied whole.
        // Appending it a scalar at a time was two thirds of the CPU of a `/library` page.
        if !text.utf8.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") || $0 < 0x20 }) {
            var out = ""
            out.reserveCapacity(text.utf8.count + 2)
            out += "\""
            out += text
            out += "\""
            return out
        }
        var out = "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
