/// JSON string quoting (RFC 8259 §7) for the few bodies built without an encoder.
public enum JSONString {
    /// `text` as a JSON string, escaped as `JSONBytes.appendString` escapes it.
    public static func quote(_ text: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count + 2)
        JSONBytes.appendString(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }
}
