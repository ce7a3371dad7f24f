/// Builds a JSON object field by field, in a fixed order, without an encoder's
/// reflection: responses and events are small and hot (`/library` is polled).
public struct JSONObjectWriter {
    public private(set) var text = ""
    private var first = true

    /// `capacity`: the bytes the object is expected to take, reserved at once so that appending
    /// field after field does not grow the string again and again.
    public init(capacity: Int = 0) {
        text.reserveCapacity(capacity)
        text += "{"
    }

    private mutating func key(_ name: String) {
        if !first { text += "," }
        first = false
        text += "\""
        text += name
        text += "\":"
    }

    public mutating func field(_ name: String, _ value: String?) {
        key(name)
        text += value.map(JSONString.quote) ?? "null"
    }

    public mutating func field(_ name: String, _ value: Int64?) {
        key(name)
        text += value.map { String($0) } ?? "null"
    }

    public mutating func field(_ name: String, _ value: Int) {
        key(name)
        text += String(value)
    }

    public mutating func field(_ name: String, _ value: UInt64) {
        key(name)
        text += String(value)
    }

    public mutating func field(_ name: String, _ value: Double?) {
        key(name)
        text += value.map { $0.isFinite ? String($0) : "null" } ?? "null"
    }

    public mutating func field(_ name: String, _ value: Bool) {
        key(name)
        text += value ? "true" : "false"
    }

    /// A field whose value is already JSON (a nested object or array).
    public mutating func rawField(_ name: String, _ json: String) {
        key(name)
        text += json
    }

    /// The finished object.
    public func finished() -> String { text + "}" }
}
