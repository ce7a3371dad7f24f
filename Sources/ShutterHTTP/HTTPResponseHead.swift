import ShutterSystem

/// Serializes a response head (RFC 9112 §4) into bytes.
enum HTTPResponseHead {
    /// The status line and headers, with `Content-Length`, `Date`, `Server` and `Connection`
    /// added as the framing requires.
    static func serialize(
        _ response: HTTPResponse, version: HTTPVersion, keepAlive: Bool, date: String, server: String,
        requestID: String
    ) -> [UInt8] {
        // Written as bytes into one buffer: every response has a head, and interpolating a
        // `String` a line and converting it at the end cost twice as much.
        var head: [UInt8] = []
        head.reserveCapacity(384)
        let code = response.status.code
        head.append(contentsOf: "HTTP/1.1 ".utf8)
        JSONBytes.appendDecimal(UInt64(max(code, 0)), to: &head)
        head.append(UInt8(ascii: " "))
        head.append(contentsOf: response.status.reason.utf8)
        appendLineEnd(to: &head)
        for (name, value) in response.headers {
            if name.caseInsensitiveEquals("Content-Length") || name.caseInsensitiveEquals("Connection") {
                continue
            }
            head.append(contentsOf: name.utf8)
            head.append(UInt8(ascii: ":"))
            head.append(UInt8(ascii: " "))
            head.append(contentsOf: value.utf8)
            appendLineEnd(to: &head)
        }
        // RFC 9110 §8.6: no Content-Length on 1xx and 204; 304 may carry the length
        // of the selected representation, but nothing requires it, so leave it out.
        // A stream's end is the connection's close (RFC 9112 §6.3, item 8).
        if code >= 200 && code != 204 && code != 304 && !response.body.isStream {
            head.append(contentsOf: "Content-Length: ".utf8)
            JSONBytes.appendDecimal(UInt64(response.body.count), to: &head)
            appendLineEnd(to: &head)
        }
        if code >= 200 {
            head.append(contentsOf: "Date: ".utf8)
            head.append(contentsOf: date.utf8)
            head.append(contentsOf: "\r\nServer: ".utf8)
            head.append(contentsOf: server.utf8)
            head.append(contentsOf: "\r\nX-Request-Id: ".utf8)
            head.append(contentsOf: requestID.utf8)
            // nosniff: a browser must never run a picture or a JSON answer as a script or a
            // page because its bytes look like one (an uploaded label, a crafted JPEG comment).
            head.append(contentsOf: "\r\nX-Content-Type-Options: nosniff\r\n".utf8)
            if !keepAlive {
                head.append(contentsOf: "Connection: close\r\n".utf8)
            } else if version == .http10 {
                head.append(contentsOf: "Connection: keep-alive\r\n".utf8)
            }
        }
        appendLineEnd(to: &head)
        return head
    }

    private static func appendLineEnd(to head: inout [UInt8]) {
        head.append(UInt8(ascii: "\r"))
        head.append(UInt8(ascii: "\n"))
    }
}

/// The `Date` header value, formatted at most once a second.
///
/// Ownership: one per server, used only on the server's loop thread.
final class HTTPDateCache {
    private let clock: any Clock
    private var second: Int64 = -1
    private var cached = ""

    /// A cache reading the wall time of `clock`.
    init(clock: any Clock) { self.clock = clock }

    /// The IMF-fixdate (RFC 9110 §5.6.7) for now.
    func current() -> String {
        let now = clock.wallMillisecondsNow() / 1000
        if now != second {
            second = now
            cached = Timestamp.httpDate(secondsSince1970: now)
        }
        return cached
    }
}
