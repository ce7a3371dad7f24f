/// Where pictures go in S3-compatible storage, from `--s3-url https://HOST/BUCKET[/PREFIX]`, and
/// how each picture's object is named and addressed. Pure: tested without a network.
public struct S3Location: Sendable, Equatable {
    /// How the bucket is named in a request (Amazon S3's "virtual hosting of buckets").
    public enum Addressing: String, Sendable, CaseIterable {
        /// `https://HOST/BUCKET/KEY`: MinIO, Garage, moto, most self-hosted stores.
        case path
        /// `https://BUCKET.HOST/KEY`: what AWS recommends.
        case virtual
    }

    /// `http` or `https`.
    public var scheme: String
    /// The host, with `:port` when given.
    public var host: String
    public var bucket: String
    /// Object keys start with this and a slash; empty: at the bucket's root.
    public var prefix: String
    public var addressing: Addressing

    /// Parses `url`; plain `http` only for a loopback host (tests, a store on this machine).
    public init(url: String, addressing: Addressing = .path) throws(S3LocationError) {
        let parts = url.split(separator: "://", maxSplits: 1).map(String.init)
        guard parts.count == 2, parts[0] == "https" || parts[0] == "http" else {
            throw S3LocationError("s3_url '\(url)' must start with https:// (or http:// for a loopback host)")
        }
        let path = parts[1].split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        guard let host = path.first, !host.isEmpty, !host.contains("@") else {
            throw S3LocationError("s3_url '\(url)' has no host")
        }
        guard path.count >= 2 else {
            throw S3LocationError("s3_url '\(url)' has no bucket: https://HOST/BUCKET[/PREFIX]")
        }
        if parts[0] == "http" && !Self.isLoopback(host: host) {
            throw S3LocationError(
                "s3_url '\(url)': plain http is only for a loopback host; keys and pictures would cross the network unencrypted"
            )
        }
        let bucket = path[1]
        guard Self.isValidBucket(bucket) else {
            throw S3LocationError(
                "s3_url '\(url)': '\(bucket)' is not a bucket name (3 to 63 of a-z, 0-9, '.', '-')")
        }
        let prefixSegments = Array(path.dropFirst(2))
        for segment in prefixSegments where !segment.utf8.allSatisfy(Self.isUnreserved) {
            throw S3LocationError(
                "s3_url '\(url)': the prefix may hold only letters, digits, '-', '_', '.', '~' and '/'")
        }
        if addressing == .virtual && bucket.contains(".") && parts[0] == "https" {
            throw S3LocationError(
                "s3_url '\(url)': a bucket name with dots does not match the store's certificate in virtual addressing; use --s3-addressing path"
            )
        }
        self.scheme = parts[0]
        self.host = host
        self.bucket = bucket
        self.prefix = prefixSegments.joined(separator: "/")
        self.addressing = addressing
    }

    /// `PREFIX/YYYY/MM/DD/{id}.jpg`, the date (UTC) from the record's `taken_at`
    /// (`2026-12-02T04:10:00.123Z`); nil if `takenAt` does not start with a date.
    public func objectKey(pictureID: Int64, takenAt: String) -> String? {
        let date = Array(takenAt.utf8.prefix(10))
        let digitPositions = [0, 1, 2, 3, 5, 6, 8, 9]
        guard date.count == 10, date[4] == UInt8(ascii: "-"), date[7] == UInt8(ascii: "-"),
            digitPositions.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(date[$0]) })
        else { return nil }
        let text = String(decoding: date, as: UTF8.self)
        let datePath = text.split(separator: "-").joined(separator: "/")
        let name = "\(datePath)/\(pictureID).jpg"
        return prefix.isEmpty ? name : "\(prefix)/\(name)"
    }

    /// The URL of the object `key` (whose characters need no escaping: see `objectKey`).
    public func objectURL(key: String) -> String {
        switch addressing {
        case .path: "\(scheme)://\(host)/\(bucket)/\(key)"
        case .virtual: "\(scheme)://\(bucket).\(host)/\(key)"
        }
    }

    /// The URL without credentials or keys, for logs and `/status`.
    public var description: String {
        "\(scheme)://\(host)/\(bucket)" + (prefix.isEmpty ? "" : "/\(prefix)")
    }

    private static func isLoopback(host: String) -> Bool {
        let name: Substring
        if host.hasPrefix("[") {
            name = host.dropFirst().prefix { $0 != "]" }
        } else {
            name = host.split(separator: ":", maxSplits: 1).first ?? ""
        }
        return name == "localhost" || name.hasPrefix("127.") || name == "::1"
    }

    private static func isValidBucket(_ name: String) -> Bool {
        (3...63).contains(name.utf8.count)
            && name.utf8.allSatisfy {
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                    || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-")
            }
    }

    // RFC 3986's unreserved characters: the same in a URL and in SigV4's canonical request, so a
    // key built of them is signed exactly as sent.
    private static func isUnreserved(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "~")
    }
}

/// An `s3_url` (or its addressing) that cannot be used.
public struct S3LocationError: Error, Equatable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
