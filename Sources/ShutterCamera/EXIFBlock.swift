import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// What every stored picture says about itself: an EXIF APP1 segment (CIPA DC-008, Exif 2.32),
/// written by hand because it is a few dozen fixed bytes and a library would be larger than it.
///
/// Pure: the caller supplies the time, its UTC offset and the names, so the bytes can be tested
/// one by one. The TIFF structure is little-endian ("II"), IFD0 then the Exif IFD, each value
/// longer than four bytes after its IFD at an even offset (TIFF 6.0 §2).
public struct EXIFBlock: Equatable, Sendable {
    /// When the picture was taken, in UTC milliseconds since 1970 (the record's `taken_at`).
    public var takenAtMilliseconds: Int64
    /// The local time's offset from UTC, in seconds east, written as `OffsetTimeOriginal`.
    public var utcOffsetSeconds: Int
    /// `Make`: the camera's driver (`uvcvideo`), or `Shutter` for a pattern Shutter draws itself.
    public var make: String
    /// `Model`: the camera's card name (`HD Pro Webcam C920`), or the source's name.
    public var model: String
    /// `Software`: the program and its version.
    public var software: String
    /// `ImageDescription`: the picture's label, left out when nil.
    public var imageDescription: String?

    /// The longest string written; the segment must stay under 64 KiB, and no name is this long.
    static let maximumStringBytes = 1024

    public init(
        takenAtMilliseconds: Int64, utcOffsetSeconds: Int, make: String, model: String, software: String,
        imageDescription: String?
    ) {
        self.takenAtMilliseconds = takenAtMilliseconds
        self.utcOffsetSeconds = utcOffsetSeconds
        self.make = make
        self.model = model
        self.software = software
        self.imageDescription = imageDescription
    }

    /// `DateTimeOriginal`: local wall time as `YYYY:MM:DD HH:MM:SS`.
    var dateTimeOriginal: String {
        let local = Timestamp.floorDivide(takenAtMilliseconds, 1000).quotient + Int64(utcOffsetSeconds)
        let (days, secondOfDay) = Timestamp.floorDivide(local, 86_400)
        let (year, month, day) = Timestamp.civilDate(daysSince1970: days)
        return "\(Timestamp.pad(year, 4)):\(Timestamp.pad(month, 2)):\(Timestamp.pad(day, 2)) "
            + "\(Timestamp.pad(secondOfDay / 3600, 2)):\(Timestamp.pad(secondOfDay / 60 % 60, 2)):\(Timestamp.pad(secondOfDay % 60, 2))"
    }

    /// `SubSecTimeOriginal`: the milliseconds, three digits.
    var subSecTimeOriginal: String {
        Timestamp.pad(Timestamp.floorDivide(takenAtMilliseconds, 1000).remainder, 3)
    }

    /// `OffsetTimeOriginal`: `+HH:MM` or `-HH:MM`.
    var offsetTimeOriginal: String {
        let minutes = abs(utcOffsetSeconds) / 60
        return (utcOffsetSeconds < 0 ? "-" : "+") + Timestamp.pad(Int64(minutes / 60), 2) + ":"
            + Timestamp.pad(Int64(minutes % 60), 2)
    }

    /// The complete APP1 segment: marker, length, `Exif\0\0`, then the TIFF structure.
    public var segment: [UInt8] {
        let tiff = tiffStructure
        let length = 2 + 6 + tiff.count
        return [0xFF, 0xE1, UInt8(length >> 8), UInt8(length & 0xFF)] + Array("Exif".utf8) + [0, 0] + tiff
    }

    /// The TIFF header and the two IFDs, offsets counted from the header's first byte.
    var tiffStructure: [UInt8] {
        var ifd0: [Entry] = []
        if let imageDescription { ifd0.append(.ascii(0x010E, imageDescription)) }
        ifd0 += [
            .ascii(0x010F, make), .ascii(0x0110, model),
            // 1: the rows are stored top to bottom, left to right; any rotation is in the pixels.
            .short(0x0112, 1),
            .ascii(0x0131, software),
            .long(0x8769, 0),  // ExifIFDPointer, filled in below
        ]
        let exif: [Entry] = [
            // "0232": the version that defines OffsetTimeOriginal (2.31) and later.
            .undefined(0x9000, Array("0232".utf8)),
            .ascii(0x9003, dateTimeOriginal),
            .ascii(0x9011, offsetTimeOriginal),
            .ascii(0x9291, subSecTimeOriginal),
        ]
        let ifd0Offset = 8
        let ifd0Size = Self.ifdSize(ifd0)
        ifd0[ifd0.count - 1] = .long(0x8769, UInt32(ifd0Offset + ifd0Size))
        var bytes: [UInt8] = Array("II".utf8) + [0x2A, 0x00] + Self.le32(UInt32(ifd0Offset))
        bytes += Self.ifd(ifd0, at: ifd0Offset)
        bytes += Self.ifd(exif, at: ifd0Offset + ifd0Size)
        return bytes
    }

    /// One directory entry: its tag, TIFF type, count and value bytes.
    enum Entry {
        case ascii(UInt16, String)
        case short(UInt16, UInt16)
        case long(UInt16, UInt32)
        case undefined(UInt16, [UInt8])

        var tag: UInt16 {
            switch self {
            case .ascii(let tag, _), .short(let tag, _), .long(let tag, _), .undefined(let tag, _): tag
            }
        }

        /// TIFF field type: 2 ASCII, 3 SHORT, 4 LONG, 7 UNDEFINED.
        var type: UInt16 {
            switch self {
            case .ascii: 2
            case .short: 3
            case .long: 4
            case .undefined: 7
            }
        }

        /// The value's bytes; its count is this length for ASCII and UNDEFINED, 1 otherwise.
        var value: [UInt8] {
            switch self {
            case .ascii(_, let text):
                // NUL ends an ASCII value, so one inside a label would cut it short: dropped.
                Array(text.utf8.filter { $0 != 0 }.prefix(EXIFBlock.maximumStringBytes)) + [0]
            case .short(_, let number): [UInt8(number & 0xFF), UInt8(number >> 8), 0, 0]
            case .long(_, let number): EXIFBlock.le32(number)
            case .undefined(_, let bytes): bytes
            }
        }

        var count: Int {
            switch self {
            case .short, .long: 1
            case .ascii, .undefined: value.count
            }
        }
    }

    /// Bytes an IFD takes: the count, 12 per entry, the next-IFD offset, and values over 4 bytes.
    static func ifdSize(_ entries: [Entry]) -> Int {
        2 + 12 * entries.count + 4
            + entries.map { $0.value.count > 4 ? padded($0.value.count) : 0 }.reduce(0, +)
    }

    /// An IFD starting at `offset`, its long values right after it, and no next IFD.
    static func ifd(_ entries: [Entry], at offset: Int) -> [UInt8] {
        var directory = le16(UInt16(entries.count))
        var values: [UInt8] = []
        let valuesOffset = offset + 2 + 12 * entries.count + 4
        for entry in entries {
            let value = entry.value
            directory += le16(entry.tag) + le16(entry.type) + le32(UInt32(entry.count))
            if value.count <= 4 {
                directory += value + [UInt8](repeating: 0, count: 4 - value.count)
            } else {
                directory += le32(UInt32(valuesOffset + values.count))
                values += value
                if value.count % 2 == 1 { values.append(0) }
            }
        }
        return directory + le32(0) + values
    }

    static func padded(_ count: Int) -> Int { count + count % 2 }
    static func le16(_ value: UInt16) -> [UInt8] { [UInt8(value & 0xFF), UInt8(value >> 8)] }
    static func le32(_ value: UInt32) -> [UInt8] {
        [UInt8(value & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 24)]
    }
}

extension EXIFBlock {
    /// `jpeg` with `segment` inserted right after its SOI, the place Exif requires (DC-008 §4.5.4);
    /// every other byte, the entropy-coded data included, is copied unchanged. A `jpeg` that does
    /// not start with SOI is returned as it is.
    public func inserted(into jpeg: [UInt8]) -> [UInt8] {
        guard jpeg.count >= 2, jpeg[0] == 0xFF, jpeg[1] == 0xD8 else { return jpeg }
        let segment = self.segment
        var result: [UInt8] = []
        result.reserveCapacity(jpeg.count + segment.count)
        result += jpeg[..<2]
        result += segment
        result += jpeg[2...]
        return result
    }
}

extension EXIFBlock {
    /// The offset of local time (the `TZ` the daemon runs in) from UTC at that instant, in seconds
    /// east, daylight saving included (localtime_r(3)'s `tm_gmtoff`).
    public static func localUTCOffsetSeconds(atMilliseconds milliseconds: Int64) -> Int {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        guard localtime_r(&seconds, &parts) != nil else { return 0 }
        return parts.tm_gmtoff
    }
}
