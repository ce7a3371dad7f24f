import ShutterSystem

/// What to send for a GET of a stored representation, given the request's
/// conditional and range headers (RFC 9110 §13 and §14). Pure: no I/O.
public enum RepresentationDecision: Equatable, Sendable {
    /// 200 with the whole body.
    case whole
    /// 206 with bytes `range` (inclusive lower, exclusive upper).
    case partial(Range<Int>)
    /// 304: the client's copy is current.
    case notModified
    /// 416: no requested byte exists.
    case rangeNotSatisfiable
    /// 412: an `If-Match` or `If-Unmodified-Since` precondition failed.
    case preconditionFailed
}

/// Evaluates conditional and range headers against a representation's validators.
public struct RepresentationValidators: Sendable {
    /// Strong entity tag including quotes, e.g. `"12-20480"`.
    public var etag: String
    /// Last modification, seconds since 1970.
    public var lastModified: Int64
    /// Size of the whole representation in bytes.
    public var length: Int

    public init(etag: String, lastModified: Int64, length: Int) {
        self.etag = etag
        self.lastModified = lastModified
        self.length = length
    }

    /// The answer to a GET or HEAD with these headers, following the order of RFC 9110 §13.2.2.
    public func evaluate(_ headers: HTTPHeaders) -> RepresentationDecision {
        if let ifMatch = headers["If-Match"] {
            if !Self.list(ifMatch, matches: etag, weak: false) { return .preconditionFailed }
        } else if let since = headers["If-Unmodified-Since"].flatMap(Timestamp.parseHTTPDate),
            lastModified > since
        {
            return .preconditionFailed
        }
        if let ifNoneMatch = headers["If-None-Match"] {
            if Self.list(ifNoneMatch, matches: etag, weak: true) { return .notModified }
        } else if let since = headers["If-Modified-Since"].flatMap(Timestamp.parseHTTPDate),
            lastModified <= since
        {
            return .notModified
        }
        guard let rangeHeader = headers["Range"] else { return .whole }
        // If-Range (§13.1.5): a range only applies to the representation the client already has.
        if let ifRange = headers["If-Range"] {
            if ifRange.hasPrefix("\"") || ifRange.hasPrefix("W/") {
                if ifRange != etag { return .whole }
            } else if Timestamp.parseHTTPDate(ifRange) != lastModified {
                return .whole
            }
        }
        return Self.range(rangeHeader, length: length)
    }

    /// Parses a single `bytes=` range (§14.1.2); several ranges are answered with the whole body,
    /// which §14.2 allows and which avoids multipart/byteranges for a picture.
    static func range(_ header: String, length: Int) -> RepresentationDecision {
        let trimmed = header.trimmingSpaces()
        guard trimmed.lowercased().hasPrefix("bytes=") else { return .whole }
        let spec = trimmed.dropFirst(6).trimmingSpaces()
        if spec.contains(",") { return .whole }
        let parts = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else { return .whole }
        let first = parts[0].trimmingSpaces()
        let last = parts[1].trimmingSpaces()
        if first.isEmpty {
            // Suffix range: the last N bytes.
            guard let suffix = Int(last), suffix >= 0, last.allSatisfy(\.isASCIIDigit) else { return .whole }
            if suffix == 0 || length == 0 { return .rangeNotSatisfiable }
            return .partial(max(0, length - suffix)..<length)
        }
        guard let start = Int(first), first.allSatisfy(\.isASCIIDigit) else { return .whole }
        if start >= length { return .rangeNotSatisfiable }
        if last.isEmpty { return .partial(start..<length) }
        guard let end = Int(last), last.allSatisfy(\.isASCIIDigit), end >= start else { return .whole }
        // `end` may be as large as the client likes (even Int.max): compare before adding.
        return .partial(start..<(end >= length - 1 ? length : end + 1))
    }

    /// Whether a comma-separated entity-tag list contains `etag` (or is `*`).
    public static func list(_ header: String, matches etag: String, weak: Bool) -> Bool {
        // A poller sends back exactly the tag it was given: that matches in either comparison,
        // as the walk below would find, without splitting and trimming the list per request.
        if header == etag { return true }
        let strip: (Substring) -> Substring = { tag in weak && tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
        return header.splitASCII(UInt8(ascii: ",")).contains { candidate in
            let tag = candidate.trimmingSpaces()
            return tag == "*" || strip(tag) == strip(Substring(etag))
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
