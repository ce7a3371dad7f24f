import ShutterSystem

/// Serializes a response head (RFC 9112 §4) into bytes.
enum HTTPResponseHead {
    /// The status line and headers, with `Content-Length`, `Date`, `Server` and `Connection`
    /// added as the framing requires.
    static func serialize(
        _ response: HTTPResponse, version: HTTPVersion, keepAlive: Bool, date: String, server: String,
        requestID: String
    ) -> [UInt8] {
        var head = "HTTP/1.1 \(response.status.code) \(response.status.reason)\r\n"
        head.reserveCapacity(256)
        for (name, value) in response.headers {
            if name.caseInsensitiveEquals("Content-Length") || name.caseInsensitiveEquals("Connection") {
                continue
            }
            head += "\(name): \(value)\r\n"
        }
        // RFC 9110 §8.6: no Content-Length on 1xx and 204; 304 may carry the length
        // of the selected representation, but nothing requires it, so leave it out.
        let code = response.status.code
        // A stream's end is the connection's close (RFC 9112 §6.3, item 8).
        if code >= 200 && code != 204 && code != 304 && !response.body.isStream {
            head += "Content-Length: \(response.body.count)\r\n"
        }
        if code >= 200 {
            // nosniff: a browser must never run a picture or a JSON answer as a script or a
            // page because its bytes look like one (an uploaded label, a crafted JPEG comment).
            head +=
                "Date: \(date)\r\nServer: \(server)\r\nX-Request-Id: \(requestID)\r\nX-Content-Type-Options: nosniff\r\n"
            if !keepAlive {
                head += "Connection: close\r\n"
            } else if version == .http10 {
                head += "Connection: keep-alive\r\n"
            }
        }
        head += "\r\n"
        return Array(head.utf8)
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
