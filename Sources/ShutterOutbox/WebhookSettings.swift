import ShutterCatalog
import ShutterSystem

/// One webhook: where to POST, which events, and how.
public struct WebhookSettings: Sendable, Equatable {
    /// `http://` or `https://`.
    public var url: String
    /// The event types it receives.
    public var events: Set<CatalogEventType>
    /// Signs every body (`X-Shutter-Signature: sha256=<hex HMAC-SHA256>`); nil sends unsigned.
    public var secret: String?
    /// Picture events carry the JPEG: `multipart/form-data` with the JSON and the picture.
    public var includeJPEG: Bool
    /// How long one POST may take, connecting included.
    public var timeoutMilliseconds: Int

    public init(
        url: String, events: Set<CatalogEventType> = Set(CatalogEventType.allCases), secret: String? = nil,
        includeJPEG: Bool = false, timeoutMilliseconds: Int = 10_000
    ) {
        self.url = url
        self.events = events
        self.secret = secret
        self.includeJPEG = includeJPEG
        self.timeoutMilliseconds = timeoutMilliseconds
    }

    /// The sink's name and cursor key: `webhook:` and the start of the URL's SHA-256, so it stays
    /// the same across restarts and when other hooks are added or removed, and shows no secret
    /// a URL might hold.
    public var sinkName: String {
        "webhook:" + String(SHA256.hexDigest(Array(url.utf8)).prefix(12))
    }

    /// Checks the URL; throws a message for the configuration error.
    public static func validate(url: String) throws(WebhookSettingsError) {
        let lower = url.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://"),
            url.split(separator: "/", omittingEmptySubsequences: false).count >= 3,
            !url.contains(" ")
        else {
            throw WebhookSettingsError(description: "webhook url '\(url)' is not an http:// or https:// URL")
        }
    }
}

/// A webhook setting that cannot be used.
public struct WebhookSettingsError: Error, Equatable, CustomStringConvertible {
    public var description: String
}

/// The POST of one event to one webhook: pure, so the body, the multipart framing and the
/// signature are tested byte by byte.
public enum WebhookRequest {
    /// The request for `event`; `jpeg` is the picture when the hook includes it and it is still
    /// there, `boundary` the multipart boundary (random per message outside tests).
    public static func make(
        _ event: CatalogEvent, settings: WebhookSettings, jpeg: [UInt8]?, boundary: String
    ) -> HTTPTransferRequest {
        let json = Array(OutboxMessage.json(event).utf8)
        var headers = [
            "X-Shutter-Event: \(event.type.rawValue)",
            "X-Shutter-Event-Id: \(event.id)",
        ]
        let body: [UInt8]
        if let jpeg {
            body = multipart(json: json, jpeg: jpeg, pictureName: pictureFileName(event), boundary: boundary)
            headers.append("Content-Type: multipart/form-data; boundary=\(boundary)")
        } else {
            body = json
            headers.append("Content-Type: application/json")
        }
        if let secret = settings.secret {
            headers.append("X-Shutter-Signature: \(signature(body: body, secret: secret))")
        }
        return HTTPTransferRequest(
            method: "POST", url: settings.url, headers: headers, body: body,
            timeoutMilliseconds: settings.timeoutMilliseconds)
    }

    /// `sha256=` and the hex HMAC-SHA256 of `body` under `secret`, as GitHub's webhooks sign.
    public static func signature(body: [UInt8], secret: String) -> String {
        "sha256=" + ByteText.hex(HMACSHA256.code(key: Array(secret.utf8), message: body))
    }

    /// `multipart/form-data` (RFC 7578): the event as the part `event`, the picture as `picture`.
    public static func multipart(json: [UInt8], jpeg: [UInt8], pictureName: String, boundary: String)
        -> [UInt8]
    {
        var body = [UInt8]()
        body.reserveCapacity(json.count + jpeg.count + 400)
        body += Array(
            "--\(boundary)\r\nContent-Disposition: form-data; name=\"event\"\r\nContent-Type: application/json\r\n\r\n"
                .utf8)
        body += json
        body += Array(
            "\r\n--\(boundary)\r\nContent-Disposition: form-data; name=\"picture\"; filename=\"\(pictureName)\"\r\nContent-Type: image/jpeg\r\n\r\n"
                .utf8)
        body += jpeg
        body += Array("\r\n--\(boundary)--\r\n".utf8)
        return body
    }

    private static func pictureFileName(_ event: CatalogEvent) -> String {
        OutboxMessage.pictureFields(of: event).map { "\($0.id).jpg" } ?? "picture.jpg"
    }
}
