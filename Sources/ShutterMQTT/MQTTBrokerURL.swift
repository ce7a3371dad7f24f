/// Where the broker is and how to log in: `mqtt://USER:PASS@HOST:PORT` or `mqtts://…`.
///
/// `description` never shows the password, so the URL may be logged and shown in `/status`.
public struct MQTTBrokerURL: Sendable, Equatable, CustomStringConvertible {
    /// Whether the connection is TLS (`mqtts`), verified against the system's certificate store.
    public var secure: Bool
    public var host: String
    public var port: Int
    public var username: String?
    public var password: String?

    /// Parses `url`; throws with a sentence that does not repeat the password.
    public init(_ url: String) throws(MQTTConfigurationError) {
        let rest: Substring
        if url.hasPrefix("mqtt://") {
            secure = false
            rest = url.dropFirst("mqtt://".count)
        } else if url.hasPrefix("mqtts://") {
            secure = true
            rest = url.dropFirst("mqtts://".count)
        } else {
            throw MQTTConfigurationError("mqtt_url must start with mqtt:// or mqtts://")
        }
        // Anything after the authority (a path, a query) has no meaning for MQTT: refuse it
        // rather than guess.
        var authority = rest
        if let slash = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) {
            guard rest[slash...] == "/" else {
                throw MQTTConfigurationError(
                    "mqtt_url takes no path or query: mqtt[s]://[USER[:PASS]@]HOST[:PORT]")
            }
            authority = rest[..<slash]
        }
        var hostPort = authority
        username = nil
        password = nil
        // The last @ ends the credentials: a password may contain @ (RFC 3986 wants it
        // percent-encoded; both are accepted).
        if let at = authority.lastIndex(of: "@") {
            let credentials = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            if let colon = credentials.firstIndex(of: ":") {
                username = try Self.percentDecoded(credentials[..<colon], "user name")
                password = try Self.percentDecoded(
                    credentials[credentials.index(after: colon)...], "password")
            } else {
                username = try Self.percentDecoded(credentials, "user name")
            }
            if username?.isEmpty == true { username = nil }
        }
        let defaultPort = secure ? 8883 : 1883
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else {
                throw MQTTConfigurationError("mqtt_url: an IPv6 address needs its closing ]")
            }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            port = try Self.port(
                after.isEmpty ? nil : after.hasPrefix(":") ? after.dropFirst() : nil, defaultPort)
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = String(hostPort[..<colon])
            port = try Self.port(hostPort[hostPort.index(after: colon)...], defaultPort)
        } else {
            host = String(hostPort)
            port = defaultPort
        }
        guard !host.isEmpty else { throw MQTTConfigurationError("mqtt_url names no host") }
    }

    /// The URL with the password replaced by `***`.
    public var description: String {
        var text = secure ? "mqtts://" : "mqtt://"
        if let username {
            text += username
            if password != nil { text += ":***" }
            text += "@"
        }
        text += host.contains(":") ? "[\(host)]" : host
        return text + ":\(port)"
    }

    private static func port(_ text: Substring?, _ defaultPort: Int) throws(MQTTConfigurationError) -> Int {
        guard let text else { throw MQTTConfigurationError("mqtt_url: expected :PORT after the host") }
        guard let port = Int(text), (1...65535).contains(port) else {
            throw MQTTConfigurationError("mqtt_url: the port must be a number from 1 to 65535")
        }
        return port
    }

    /// `%XX` escapes decoded; the error names the part, never its text (it may be the password).
    private static func percentDecoded(_ text: Substring, _ part: String) throws(MQTTConfigurationError)
        -> String
    {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard utf8.count >= 2, let high = hexValue(utf8.removeFirst()),
                let low = hexValue(utf8.removeFirst())
            else { throw MQTTConfigurationError("mqtt_url: a malformed %-escape in the \(part)") }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// A setting of the MQTT sink that cannot be used, said without secrets.
public struct MQTTConfigurationError: Error, Equatable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
