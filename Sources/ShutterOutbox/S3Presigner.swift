import ShutterSystem

/// Presigned `GET` URLs for S3 objects: AWS Signature V4 in the query string ("Authenticating
/// Requests: Using Query Parameters", the Amazon S3 API reference), computed with libcrypto's
/// HMAC-SHA256, since libcurl signs only the requests it sends.
///
/// A building block for the offload mode (a `/media` redirect to the stored picture), which is
/// not wired up yet. Pure: tested against AWS's published example.
public enum S3Presigner {
    /// A URL that lets whoever holds it `GET` object `key` until `expiresInSeconds` after
    /// `nowSecondsSince1970` (1 s to 7 days, as S3 allows).
    public static func presignedGetURL(
        key: String, location: S3Location, region: String, credentials: S3Credentials,
        nowSecondsSince1970: Int64,
        expiresInSeconds: Int
    ) -> String {
        let host: String
        let path: String
        switch location.addressing {
        case .path:
            host = location.host
            path = "/\(location.bucket)/\(key)"
        case .virtual:
            host = "\(location.bucket).\(location.host)"
            path = "/\(key)"
        }
        let (date, dateTime) = amzDate(secondsSince1970: nowSecondsSince1970)
        let scope = "\(date)/\(region)/s3/aws4_request"
        // Already in canonical order (sorted by name); the values encoded as SigV4 asks.
        let query = [
            ("X-Amz-Algorithm", "AWS4-HMAC-SHA256"),
            ("X-Amz-Credential", "\(credentials.accessKeyID)/\(scope)"),
            ("X-Amz-Date", dateTime),
            ("X-Amz-Expires", String(min(max(1, expiresInSeconds), 604_800))),
            ("X-Amz-SignedHeaders", "host"),
        ].map { "\($0.0)=\(uriEncode($0.1))" }.joined(separator: "&")
        // The object keys need no encoding (S3Location keeps them to unreserved characters).
        let canonicalRequest = "GET\n\(path)\n\(query)\nhost:\(host)\n\nhost\nUNSIGNED-PAYLOAD"
        let stringToSign =
            "AWS4-HMAC-SHA256\n\(dateTime)\n\(scope)\n\(SHA256.hexDigest(Array(canonicalRequest.utf8)))"
        var signingKey = Array("AWS4\(credentials.secretAccessKey)".utf8)
        for part in [date, region, "s3", "aws4_request"] {
            signingKey = HMACSHA256.code(key: signingKey, message: Array(part.utf8))
        }
        let signature = ByteText.hex(HMACSHA256.code(key: signingKey, message: Array(stringToSign.utf8)))
        return "\(location.scheme)://\(host)\(path)?\(query)&X-Amz-Signature=\(signature)"
    }

    /// `20130524` and `20130524T000000Z` (UTC).
    static func amzDate(secondsSince1970 seconds: Int64) -> (date: String, dateTime: String) {
        let (days, secondOfDay) = Timestamp.floorDivide(seconds, 86_400)
        let (year, month, day) = Timestamp.civilDate(daysSince1970: days)
        let date = Timestamp.pad(year, 4) + Timestamp.pad(month, 2) + Timestamp.pad(day, 2)
        let time =
            Timestamp.pad(secondOfDay / 3600, 2) + Timestamp.pad(secondOfDay / 60 % 60, 2)
            + Timestamp.pad(secondOfDay % 60, 2)
        return (date, "\(date)T\(time)Z")
    }

    /// RFC 3986 percent-encoding of everything but the unreserved characters, as SigV4 requires.
    static func uriEncode(_ text: String) -> String {
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"),
                UInt8(ascii: "."),
                UInt8(ascii: "~"):
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
