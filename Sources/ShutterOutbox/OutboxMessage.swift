import FoundationEssentials
import ShutterCatalog
import ShutterSystem

/// How an event leaves the host: one JSON object with its id (for receivers to drop duplicates,
/// since delivery is at least once), its type, when it was recorded, and its data as recorded.
public enum OutboxMessage {
    /// `{"id":12,"type":"picture.created","at":"2026-12-02T04:10:00.123Z","data":{...}}`
    public static func json(_ event: CatalogEvent) -> String {
        var object = JSONObjectWriter()
        object.field("id", event.id)
        object.field("type", event.type.rawValue)
        object.field("at", Timestamp.iso8601(millisecondsSince1970: event.at))
        object.rawField("data", event.data)
        return object.finished()
    }

    /// The fields of a `picture.*` event's data that the sinks use.
    public struct PictureFields: Decodable, Sendable, Equatable {
        public var id: Int64
        /// ISO 8601 UTC; in `picture.deleted` since it carries it (older events lack it).
        public var takenAt: String?
        /// Lowercase hex SHA-256 of the JPEG.
        public var sha256: String?
        public var label: String?
        public var jobID: Int64?
        /// Where the picture lives (`local`, `s3`), in records that say it.
        public var stored: [String]?

        enum CodingKeys: String, CodingKey {
            case id
            case takenAt = "taken_at"
            case sha256
            case label
            case jobID = "job_id"
            case stored
        }

        public init(
            id: Int64, takenAt: String? = nil, sha256: String? = nil, label: String? = nil,
            jobID: Int64? = nil
        ) {
            self.id = id
            self.takenAt = takenAt
            self.sha256 = sha256
            self.label = label
            self.jobID = jobID
        }
    }

    /// The picture fields of `event`'s data, or nil when it is not a picture event or its data
    /// does not say which picture.
    public static func pictureFields(of event: CatalogEvent) -> PictureFields? {
        switch event.type {
        case .pictureCreated, .pictureUpdated, .pictureDeleted:
            return try? JSONDecoder().decode(PictureFields.self, from: Data(event.data.utf8))
        default:
            return nil
        }
    }
}

/// Hex and base64, as HTTP headers and signatures write bytes.
public enum ByteText {
    /// Lowercase hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of an even-length hex string, or nil if it is not one.
    public static func bytes(hex: String) -> [UInt8]? {
        let digits = Array(hex.utf8)
        guard digits.count % 2 == 0 else { return nil }
        func value(_ digit: UInt8) -> UInt8? {
            switch digit {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
            default: nil
            }
        }
        var bytes = [UInt8]()
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// Standard base64 with padding (RFC 4648, section 4).
    public static func base64(_ bytes: [UInt8]) -> String {
        let alphabet: [UInt8] = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        var out = [UInt8]()
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index < bytes.count {
            let chunk = bytes[index..<min(index + 3, bytes.count)]
            let b0 = chunk[chunk.startIndex]
            let b1 = chunk.count > 1 ? chunk[chunk.startIndex + 1] : 0
            let b2 = chunk.count > 2 ? chunk[chunk.startIndex + 2] : 0
            out.append(alphabet[Int(b0 >> 2)])
            out.append(alphabet[Int((b0 & 0x03) << 4 | b1 >> 4)])
            out.append(chunk.count > 1 ? alphabet[Int((b1 & 0x0F) << 2 | b2 >> 6)] : UInt8(ascii: "="))
            out.append(chunk.count > 2 ? alphabet[Int(b2 & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` with every byte outside printable ASCII (and `%`) percent-encoded, so any label fits
    /// in an HTTP header (S3 metadata is ASCII: its documentation asks for an encoding).
    public static func headerSafe(_ text: String) -> String {
        let digits: [UInt8] = Array("0123456789ABCDEF".utf8)
        var out = [UInt8]()
        for byte in text.utf8 {
            if byte >= 0x20 && byte < 0x7F && byte != UInt8(ascii: "%") {
                out.append(byte)
            } else {
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
