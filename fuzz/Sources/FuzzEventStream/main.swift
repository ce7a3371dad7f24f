// Fuzzes GET /events's inputs and its writer: the `Last-Event-ID` header and the `types` query
// (EventRoutes), and the framing of an event's data as `text/event-stream` (ServerSentEvent).
//
// An input's first line is the Last-Event-ID value, its second the types, the rest an event's
// data. The framed event, read back as WHATWG HTML §9.2.6 says a browser reads it (lines end at
// CRLF, LF or CR), must be one event with that id, type and data: a line break in the data can
// only come back as "\n", since the format cannot carry a CR.
import FuzzSupport
import ShutterCatalog
import ShutterHTTP

@testable import ShutterAPI

/// The events a browser's EventSource dispatches from `bytes`: (id, type, data) each.
func dispatchedEvents(_ bytes: [UInt8]) -> [(id: String, type: String, data: String)] {
    var events: [(id: String, type: String, data: String)] = []
    var (id, type, data) = ("", "", "")
    var lines: [[UInt8]] = []
    var line: [UInt8] = []
    var index = 0
    while index < bytes.count {
        let byte = bytes[index]
        index += 1
        if byte == 0x0D || byte == 0x0A {
            if byte == 0x0D, index < bytes.count, bytes[index] == 0x0A { index += 1 }
            lines.append(line)
            line = []
        } else {
            line.append(byte)
        }
    }
    // By bytes, as the WHATWG algorithm works on code points: a colon or a space followed by a
    // combining mark is one Character to Swift, and would hide the field's colon or its space.
    for line in lines {
        if line.isEmpty {
            if !data.isEmpty {
                events.append((id, type, String(data.dropLast())))
            }
            (type, data) = ("", "")
            continue
        }
        if line.first == UInt8(ascii: ":") { continue }
        let field: ArraySlice<UInt8>
        var value: ArraySlice<UInt8>
        if let colon = line.firstIndex(of: UInt8(ascii: ":")) {
            field = line[..<colon]
            value = line[(colon + 1)...]
            if value.first == UInt8(ascii: " ") { value = value.dropFirst() }
        } else {
            (field, value) = (line[...], [])
        }
        let text = String(decoding: value, as: UTF8.self)
        switch String(decoding: field, as: UTF8.self) {
        case "id": id = text
        case "event": type = text
        case "data": data += text + "\n"
        default: break
        }
    }
    return events
}

/// `text` with each CRLF and CR turned into LF, by unicode scalars (a Character holds CRLF as one).
func normalizingLineBreaks(_ text: String) -> String {
    var scalars = String.UnicodeScalarView()
    var previousWasCR = false
    for scalar in text.unicodeScalars {
        if scalar == "\n" && previousWasCR {
            previousWasCR = false
            continue
        }
        previousWasCR = scalar == "\r"
        scalars.append(previousWasCR ? "\n" : scalar)
    }
    return String(scalars)
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    let parts = bytes.split(separator: UInt8(ascii: "\n"), maxSplits: 2, omittingEmptySubsequences: false)
    let header = String(decoding: parts[0], as: UTF8.self)
    let types = parts.count > 1 ? String(decoding: parts[1], as: UTF8.self) : ""
    let data = parts.count > 2 ? String(decoding: parts[2], as: UTF8.self) : ""

    let request = HTTPRequest(
        method: .get, target: "/events?types=\(types)", headers: ["Last-Event-ID": header])
    do {
        let query = try QueryParameters(request, allowed: ["types", "last_event_id"])
        if let id = try EventRoutes.lastEventID(request, query) { invariant(id >= 0, "cursor \(id)") }
        if let text = try query.text("types") { _ = try EventRoutes.parseTypes(text) }
    } catch let error as HTTPError {
        invariant(error.status == .badRequest, "refused with \(error.status)")
    } catch {
        invariant(false, "refused with \(error), not an HTTPError")
    }

    // EventSource dispatches nothing for empty data, so the data checked has a character.
    let event = ServerSentEvent(CatalogEvent(id: 7, type: .pictureCreated, at: 0, data: data + "."))
    let expected = normalizingLineBreaks(data + ".")
    let events = dispatchedEvents(event.bytes)
    invariant(events.count == 1, "\(events.count) events from \(event.bytes)")
    invariant(events.first?.id == "7" && events.first?.type == "picture.created", "id or type changed")
    invariant(
        events.first?.data == expected,
        "data \(String(reflecting: events.first?.data)) for \(String(reflecting: expected))")
    return 0
}

runLibFuzzer(testOneInput)
