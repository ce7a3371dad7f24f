import ShutterSystem

/// An HTTP request method. Kept as its token so unknown methods can still be answered with 405/501.
public struct HTTPMethod: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public static let get = HTTPMethod(rawValue: "GET")
    public static let head = HTTPMethod(rawValue: "HEAD")
    public static let post = HTTPMethod(rawValue: "POST")
    public static let put = HTTPMethod(rawValue: "PUT")
    public static let patch = HTTPMethod(rawValue: "PATCH")
    public static let delete = HTTPMethod(rawValue: "DELETE")
    public static let options = HTTPMethod(rawValue: "OPTIONS")

    public var description: String { rawValue }
}

/// The protocol version from the request line.
public struct HTTPVersion: Hashable, Sendable, CustomStringConvertible {
    public var major: Int
    public var minor: Int
    public init(major: Int, minor: Int) {
        self.major = major
        self.minor = minor
    }
    public static let http10 = HTTPVersion(major: 1, minor: 0)
    public static let http11 = HTTPVersion(major: 1, minor: 1)
    public var description: String { "HTTP/\(major).\(minor)" }
}

/// Header fields in the order received; lookups ignore case (RFC 9110 §5.1).
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    public private(set) var fields: [(name: String, value: String)] = []

    public init() {}
    public init(dictionaryLiteral elements: (String, String)...) {
        fields.reserveCapacity(elements.count)
        for (name, value) in elements { add(name: name, value: value) }
    }

    public mutating func add(name: String, value: String) { fields.append((name, value)) }

    /// Makes room for `count` fields in all, so adding them one by one reallocates nothing.
    public mutating func reserveCapacity(_ count: Int) { fields.reserveCapacity(count) }

    /// Replaces every field called `name` with one field.
    public mutating func replaceOrAdd(name: String, value: String) {
        remove(name: name)
        add(name: name, value: value)
    }

    public mutating func remove(name: String) {
        fields.removeAll { $0.name.caseInsensitiveEquals(name) }
    }

    /// The first value of `name`, or nil.
    public subscript(name: String) -> String? {
        fields.first { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        // Asked for fields most requests do not have (Transfer-Encoding, Expect): no match
        // allocates nothing.
        var found: [String] = []
        for field in fields where field.name.caseInsensitiveEquals(name) { found.append(field.value) }
        return found
    }

    /// Whether the comma-separated list in `name` contains `token` (case-insensitive), as for `Connection: close`.
    public func containsToken(_ token: String, in name: String) -> Bool {
        values(name).contains { value in
            value.splitASCII(UInt8(ascii: ",")).contains { $0.trimmingSpaces().caseInsensitiveEquals(token) }
        }
    }

    public var count: Int { fields.count }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> { fields.makeIterator() }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { $0.name == $1.name && $0.value == $1.value }
    }
}

/// A complete request: head and (already de-chunked) body.
public struct HTTPRequest: Sendable {
    public var method: HTTPMethod
    /// The request target in origin-form (absolute-form is converted) or `*`, e.g. `/library?limit=5`.
    public var target: String {
        didSet { path = Self.decodedPath(of: target) }
    }
    /// The path part of the target, percent-decoded (nil if the encoding is invalid). Decoded
    /// once, when the target is set: the policy, the router and the handler each read it.
    public private(set) var path: String?
    public var version: HTTPVersion
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The client's address, set by the server when it dispatches the request (nil in tests that
    /// build requests by hand).
    public var peer: PeerAddress?
    /// The id of this request in the response's `X-Request-Id` and in the logs (set by the
    /// server when it dispatches the request; empty in requests built by hand).
    public var id: String = ""
    /// Unix seconds after which what the policy granted this request ends (a signed link's
    /// `exp`), set by the server when it dispatches the request; nil when the grant has no end.
    /// A response that outlives its request, a live stream, must stop then.
    public var accessExpiresAt: Int64?

    public init(
        method: HTTPMethod, target: String, version: HTTPVersion = .http11, headers: HTTPHeaders = [:],
        body: [UInt8] = [], peer: PeerAddress? = nil
    ) {
        self.method = method
        self.target = target
        self.path = Self.decodedPath(of: target)
        self.version = version
        self.headers = headers
        self.body = body
        self.peer = peer
    }

    private static func decodedPath(of target: String) -> String? {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else {
            return PercentEncoding.decode(target, plusAsSpace: false)
        }
        return PercentEncoding.decode(target[..<mark], plusAsSpace: false)
    }

    /// The query parameters as sent, still percent-encoded, in order.
    public var rawQuery: [(name: Substring, value: Substring)] {
        guard let mark = target.utf8.firstIndex(of: UInt8(ascii: "?")) else { return [] }
        return target[target.utf8.index(after: mark)...].splitASCII(UInt8(ascii: "&")).map { pair in
            let kv = pair.splitASCII(UInt8(ascii: "="), maxSplits: 1, omittingEmptySubsequences: false)
            return (kv[0], kv.count > 1 ? kv[1] : "")
        }
    }

    /// The query parameters, percent-decoded, in order (`+` means space, per HTML forms).
    /// Pairs whose encoding is malformed or not UTF-8 are left out: endpoints that must refuse
    /// them read `rawQuery` (as `QueryParameters` does).
    public var query: [(name: String, value: String)] {
        rawQuery.compactMap { pair in
            guard let name = PercentEncoding.decode(pair.name, plusAsSpace: true),
                let value = PercentEncoding.decode(pair.value, plusAsSpace: true)
            else { return nil }
            return (name, value)
        }
    }

    /// The first query parameter called `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }

    /// Whether the connection stays open after this request (RFC 9112 §9.3):
    /// HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool {
        if headers.containsToken("close", in: "Connection") { return false }
        if version.major == 1 && version.minor >= 1 { return true }
        return headers.containsToken("keep-alive", in: "Connection")
    }
}

/// A response status code with its reason phrase.
public struct HTTPStatus: Hashable, Sendable, CustomStringConvertible {
    public let code: Int
    public let reason: String
    public init(code: Int, reason: String) {
        self.code = code
        self.reason = reason
    }

    public static let `continue` = HTTPStatus(code: 100, reason: "Continue")
    public static let ok = HTTPStatus(code: 200, reason: "OK")
    public static let created = HTTPStatus(code: 201, reason: "Created")
    public static let accepted = HTTPStatus(code: 202, reason: "Accepted")
    public static let noContent = HTTPStatus(code: 204, reason: "No Content")
    public static let partialContent = HTTPStatus(code: 206, reason: "Partial Content")
    public static let notModified = HTTPStatus(code: 304, reason: "Not Modified")
    public static let badRequest = HTTPStatus(code: 400, reason: "Bad Request")
    public static let unauthorized = HTTPStatus(code: 401, reason: "Unauthorized")
    public static let forbidden = HTTPStatus(code: 403, reason: "Forbidden")
    public static let notFound = HTTPStatus(code: 404, reason: "Not Found")
    public static let methodNotAllowed = HTTPStatus(code: 405, reason: "Method Not Allowed")
    public static let requestTimeout = HTTPStatus(code: 408, reason: "Request Timeout")
    public static let conflict = HTTPStatus(code: 409, reason: "Conflict")
    public static let lengthRequired = HTTPStatus(code: 411, reason: "Length Required")
    public static let preconditionFailed = HTTPStatus(code: 412, reason: "Precondition Failed")
    public static let contentTooLarge = HTTPStatus(code: 413, reason: "Content Too Large")
    public static let uriTooLong = HTTPStatus(code: 414, reason: "URI Too Long")
    public static let unsupportedMediaType = HTTPStatus(code: 415, reason: "Unsupported Media Type")
    public static let rangeNotSatisfiable = HTTPStatus(code: 416, reason: "Range Not Satisfiable")
    public static let expectationFailed = HTTPStatus(code: 417, reason: "Expectation Failed")
    public static let unprocessableContent = HTTPStatus(code: 422, reason: "Unprocessable Content")
    public static let tooManyRequests = HTTPStatus(code: 429, reason: "Too Many Requests")
    public static let requestHeaderFieldsTooLarge = HTTPStatus(
        code: 431, reason: "Request Header Fields Too Large")
    public static let internalServerError = HTTPStatus(code: 500, reason: "Internal Server Error")
    public static let notImplemented = HTTPStatus(code: 501, reason: "Not Implemented")
    public static let serviceUnavailable = HTTPStatus(code: 503, reason: "Service Unavailable")
    public static let httpVersionNotSupported = HTTPStatus(code: 505, reason: "HTTP Version Not Supported")
    public static let insufficientStorage = HTTPStatus(code: 507, reason: "Insufficient Storage")

    public var description: String { "\(code) \(reason)" }
}

/// A byte range of an open file, sent with `sendfile` so the bytes never enter user space.
public struct FileRegion: Sendable {
    /// Owns the descriptor: closes it when the last reference goes away.
    public final class Handle: Sendable {
        public let descriptor: Int32
        public init(descriptor: Int32) { self.descriptor = descriptor }
        deinit { closeDescriptor(descriptor) }
    }
    public let handle: Handle
    public let offset: Int
    public let length: Int

    public init(handle: Handle, offset: Int, length: Int) {
        self.handle = handle
        self.offset = offset
        self.length = length
    }
}

/// What follows the response head.
public enum HTTPBody: Sendable {
    case empty
    /// Bytes in memory, written with `writev` together with the head (no copy).
    case bytes([UInt8])
    /// Part of a file, written with `sendfile`.
    case file(FileRegion)
    /// Produced while it is written (a live stream): no length, and the connection closes after it.
    case stream(any HTTPBodyStream)

    /// How many bytes the body has (0 for a stream, whose length is not known).
    public var count: Int {
        switch self {
        case .empty, .stream: return 0
        case .bytes(let bytes): return bytes.count
        case .file(let region): return region.length
        }
    }

    /// Whether the body is a stream, which has no `Content-Length`.
    public var isStream: Bool {
        if case .stream = self { return true }
        return false
    }
}

/// A response to be written by the server.
public struct HTTPResponse: Sendable {
    public var status: HTTPStatus
    public var headers: HTTPHeaders
    public var body: HTTPBody

    public init(status: HTTPStatus = .ok, headers: HTTPHeaders = [:], body: HTTPBody = .empty) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

extension StringProtocol {
    /// ASCII case-insensitive comparison, as header names and tokens need.
    public func caseInsensitiveEquals(_ other: some StringProtocol) -> Bool {
        let a = self.utf8
        let b = other.utf8
        guard a.count == b.count else { return false }
        var i = a.startIndex
        var j = b.startIndex
        while i != a.endIndex {
            let x = a[i]
            let y = b[j]
            if x != y {
                let folded = x | 0x20
                guard folded == y | 0x20, folded >= 0x61, folded <= 0x7A else { return false }
            }
            i = a.index(after: i)
            j = b.index(after: j)
        }
        return true
    }

    /// The text without leading and trailing spaces and tabs.
    public func trimmingSpaces() -> Substring {
        // Over the bytes: space and tab are ASCII, and a Character walk costs a grapheme break each.
        let whole = Substring(self)
        let bytes = whole.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start != end, bytes[start] == 0x20 || bytes[start] == 0x09 { start = bytes.index(after: start) }
        while start != end {
            let last = bytes.index(before: end)
            guard bytes[last] == 0x20 || bytes[last] == 0x09 else { break }
            end = last
        }
        return whole[start..<end]
    }
}
