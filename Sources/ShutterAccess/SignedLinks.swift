import FoundationEssentials
import ShutterHTTP
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Signed links for embedding: a URL that grants `view` for one path until it expires, such as
/// `/media/12.jpg?exp=1767225600&sig=…`, to put in an `<img>` or share without a token.
///
/// The signature is HMAC-SHA256 over the path and the expiry under a key kept in the data
/// directory (`link-signing.key`, made at first start, mode 0600). Deleting that file and
/// restarting revokes every link made so far.
public struct SignedLinks: Sendable {
    /// The key file's name in the data directory.
    public static let keyFileName = "link-signing.key"
    /// The longest lifetime a link may be given: a year.
    public static let maximumLifetimeSeconds: Int64 = 366 * 24 * 3600

    private let key: [UInt8]

    /// Links signed with `key` (tests); the daemon uses `loadOrCreate(dataDirectory:)`.
    public init(key: [UInt8]) { self.key = key }

    /// Whether a link can be made for `path`: the pictures and the preview, nothing that changes state.
    public static func isLinkable(_ path: String) -> Bool {
        if path == "/preview.mjpg" || path == "/preview.jpg" { return true }
        guard path.hasPrefix("/media/"), path.hasSuffix(".jpg") else { return false }
        let id = path.dropFirst("/media/".count).dropLast(".jpg".count)
        return !id.isEmpty && id.first != "0" && id.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// The link to `path` that is valid until `expiresAt` (Unix seconds): `path?exp=…&sig=…`.
    public func link(path: String, expiresAt: Int64) -> String {
        "\(path)?exp=\(expiresAt)&sig=\(signature(path: path, expiresAt: expiresAt))"
    }

    /// What a request's `exp` and `sig` parameters say.
    enum Check: Equatable {
        /// The request carries neither: it is not a signed link.
        case absent
        /// A valid link until `expiresAt` (Unix seconds); `target` is the request's target
        /// without `exp` and `sig`.
        case valid(target: String, expiresAt: Int64)
        case expired
        /// Why the link is refused, safe to show the client.
        case invalid(String)
    }

    /// Checks the signed-link parameters of `request` for `path` at `nowSeconds` (Unix time).
    func check(_ request: HTTPRequest, path: String, nowSeconds: Int64) -> Check {
        // No query, no link: the common case, answered without splitting the target.
        guard request.target.utf8.contains(UInt8(ascii: "?")) else { return .absent }
        let parts = request.target.splitASCII(
            UInt8(ascii: "?"), maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .absent }
        var expiry: String?
        var signature: String?
        var kept: [Substring] = []
        for pair in parts[1].splitASCII(UInt8(ascii: "&")) {
            let name = pair.splitASCII(UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)[0]
            let value =
                pair.contains("=") ? String(pair[pair.index(after: pair.firstIndex(of: "=")!)...]) : ""
            switch name {
            case "exp":
                if expiry != nil { return .invalid("exp is given twice") }
                expiry = value
            case "sig":
                if signature != nil { return .invalid("sig is given twice") }
                signature = value
            default: kept.append(pair)
            }
        }
        if expiry == nil && signature == nil { return .absent }
        guard let expiry, let signature else { return .invalid("a signed link needs both exp and sig") }
        guard !expiry.isEmpty, expiry.utf8.count <= 12, expiry.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
            let expiresAt = Int64(expiry)
        else { return .invalid("exp must be Unix seconds") }
        let expected = Array(self.signature(path: path, expiresAt: expiresAt).utf8)
        guard Secrets.constantTimeEquals(expected, Array(signature.utf8)) else {
            return .invalid("the link's signature does not match this path and expiry")
        }
        // Checked after the signature, so a forged link learns nothing from the answer.
        guard nowSeconds <= expiresAt else { return .expired }
        let target = kept.isEmpty ? String(parts[0]) : "\(parts[0])?\(kept.joined(separator: "&"))"
        return .valid(target: target, expiresAt: expiresAt)
    }

    /// `target` with the value of every `sig` parameter replaced by `-`, for the logs.
    static func redactingSignature(_ target: String) -> String {
        let parts = target.splitASCII(UInt8(ascii: "?"), maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return target }
        let query = parts[1].splitASCII(UInt8(ascii: "&"), omittingEmptySubsequences: false).map { pair in
            pair.hasPrefix("sig=") ? "sig=-" : String(pair)
        }
        return "\(parts[0])?\(query.joined(separator: "&"))"
    }

    private func signature(path: String, expiresAt: Int64) -> String {
        let message = Array("shutterd-link-v1\n\(path)\n\(expiresAt)".utf8)
        return Self.base64URL(HMACSHA256.code(key: key, message: message))
    }

    /// Base64url without padding (RFC 4648 §5): safe in a query without percent-encoding.
    static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = String(
            text.compactMap { character -> Character? in
                switch character {
                case "+": "-"
                case "/": "_"
                case "=": nil
                default: character
                }
            })
        return text
    }

    /// The links of the daemon whose data directory is `dataDirectory`: reads its key, or makes
    /// one (32 random bytes, hex, mode 0600) the first time.
    public static func loadOrCreate(dataDirectory: String) throws -> SignedLinks {
        let path = dataDirectory + "/" + keyFileName
        if let text = try readSmallFile(path) {
            let hex = text.trimmingSpaces().filter { $0 != "\n" && $0 != "\r" }
            guard let key = decodeHex(String(hex)), key.count >= 32 else {
                throw AccessConfigurationError(
                    "\(path): not a link-signing key (64 hex digits); delete it to make a new one")
            }
            return SignedLinks(key: key)
        }
        let key = try Secrets.randomBytes(count: 32)
        let hex = key.map { byte in
            let digits = Array("0123456789abcdef")
            return "\(digits[Int(byte >> 4)])\(digits[Int(byte & 0x0F)])"
        }.joined()
        // Written aside, made durable, then renamed into place and the directory synced: a
        // power cut during the first start leaves either no key or a whole one, never an empty
        // file that would stop every later start.
        let temporary = dataDirectory + "/." + keyFileName + ".tmp"
        unlink(temporary)
        let descriptor = try syscall("open \(temporary)") {
            open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        }
        do {
            defer { _ = closeDescriptor(descriptor) }
            let bytes = Array((hex + "\n").utf8)
            let written = try bytes.withUnsafeBytes { raw in
                try syscall("write \(temporary)") { write(descriptor, raw.baseAddress, raw.count) }
            }
            guard written == bytes.count else { throw SystemError(errno: EIO, call: "write \(temporary)") }
            _ = try syscall("fsync \(temporary)") { fsync(descriptor) }
        } catch {
            unlink(temporary)
            throw error
        }
        _ = try syscall("rename \(temporary)") { rename(temporary, path) }
        let directory = try syscall("open \(dataDirectory)") {
            open(dataDirectory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        }
        defer { _ = closeDescriptor(directory) }
        _ = try syscall("fsync \(dataDirectory)") { fsync(directory) }
        return SignedLinks(key: key)
    }

    /// The text of the file at `path`, or nil if it does not exist.
    private static func readSmallFile(_ path: String) throws -> String? {
        let descriptor: Int32
        do {
            descriptor = try syscall("open \(path)") { open(path, O_RDONLY | O_CLOEXEC) }
        } catch let error as SystemError where error.errno == ENOENT {
            return nil
        }
        defer { _ = closeDescriptor(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 4096)
        let count = try buffer.withUnsafeMutableBytes { raw in
            try syscall("read \(path)") { read(descriptor, raw.baseAddress, raw.count) }
        }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    private static func decodeHex(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case 0x30...0x39: digit - 0x30
            case 0x61...0x66: digit - 0x61 + 10
            case 0x41...0x46: digit - 0x41 + 10
            default: nil
            }
        }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}
