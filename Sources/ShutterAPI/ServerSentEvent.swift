import ShutterCatalog
import ShutterSystem

/// One event framed for `text/event-stream` (WHATWG HTML §9.2, "Server-sent events"): built once
/// per event and shared by every stream that sends it.
struct ServerSentEvent: Sendable, Equatable {
    /// The catalog's id of the event (the `id:` field, what `Last-Event-ID` echoes back).
    let id: Int64
    /// The event's type, for a stream's `types` filter; nil for `reset`, which every stream gets.
    let type: CatalogEventType?
    /// `id:`, `event:`, `data:` and the blank line that dispatches it.
    let bytes: [UInt8]

    init(_ event: CatalogEvent) {
        self.init(id: event.id, type: event.type, name: event.type.rawValue, data: event.data)
    }

    private init(id: Int64, type: CatalogEventType?, name: String, data: String) {
        self.id = id
        self.type = type
        var text = "id: \(id)\nevent: \(name)\n"
        // A line break inside `data` would end the field; each line goes in a `data:` of its own,
        // which the client joins back with "\n". The catalog writes compact JSON, so this is one.
        // A client ends a line at CRLF, LF or CR (WHATWG HTML §9.2.6), so data is split at each;
        // by unicode scalars, since a Character holds CRLF as one.
        let scalars = data.unicodeScalars
        var lineStart = scalars.startIndex
        var index = scalars.startIndex
        while index < scalars.endIndex {
            let scalar = scalars[index]
            guard scalar == "\r" || scalar == "\n" else {
                index = scalars.index(after: index)
                continue
            }
            text += "data: \(String(scalars[lineStart..<index]))\n"
            index = scalars.index(after: index)
            if scalar == "\r", index < scalars.endIndex, scalars[index] == "\n" {
                index = scalars.index(after: index)
            }
            lineStart = index
        }
        text += "data: \(String(scalars[lineStart...]))\n\n"
        bytes = Array(text.utf8)
    }

    /// Tells a client that fell behind the kept history (or came with a cursor this catalog never
    /// gave) to list `/library` again; its id is where the stream goes on from.
    static func reset(latestID: Int64) -> ServerSentEvent {
        var object = JSONObjectWriter()
        object.field("reason", "history_pruned")
        object.field("latest_id", latestID)
        object.field("relist", "/library")
        return ServerSentEvent(id: latestID, type: nil, name: "reset", data: object.finished())
    }

    /// Sent first: how long a client waits before reconnecting (`retry:` in milliseconds), shorter
    /// than EventSource's default of about 3 s, so a page is current again soon after a restart.
    static let preamble = Array("retry: 1000\n\n".utf8)

    /// A comment line: ignored by clients, it keeps proxies and NAT tables from closing an idle
    /// stream.
    static let keepAlive = Array(": keep-alive\n\n".utf8)
}
