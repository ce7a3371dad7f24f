import ShutterHTTP
import ShutterSystem

/// Refuses a JSON body that gives a key twice in one object (400 naming it): `JSONDecoder`
/// would keep the first value silently, so `{"delay": 5, "delay": -1}` would mean 5.
func requireUniqueKeys(_ body: [UInt8]) throws {
    if let duplicate = JSONDuplicateKeys.first(in: body) {
        throw HTTPError(
            .badRequest, "duplicate field",
            detail: "field `\(duplicate)` is given twice; give each field once")
    }
}
