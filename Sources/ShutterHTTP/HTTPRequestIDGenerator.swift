/// Request IDs unique for this process, for logs and the `X-Request-Id` header.
///
/// Ownership: one per server, shared by its connections, used only on the server's loop thread.
final class HTTPRequestIDGenerator {
    private var nextID: UInt64

    /// IDs counting up from `first`.
    init(first: UInt64 = 1) { nextID = first }

    /// A fresh ID.
    func next() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }
}
