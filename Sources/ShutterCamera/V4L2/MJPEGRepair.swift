/// Checks MJPEG frames from a camera and makes them complete JPEG files.
///
/// Pure functions over bytes: no I/O, so every rule is unit-tested.
public enum MJPEGRepair {
    /// Frames shorter than this are never whole pictures (the headers alone are longer).
    public static let minimumLength = 128

    /// Where the parts of a valid frame are.
    public struct Layout: Sendable, Equatable {
        /// Bytes up to and including the EOI marker; anything after it is padding.
        public var length: Int
        /// Offset of the SOS marker (its 0xFF byte).
        public var startOfScan: Int
        /// Whether a DHT segment precedes SOS.
        public var hasHuffmanTables: Bool
        /// The frame size from the SOF segment, if one precedes SOS.
        public var size: FrameSize?
    }

    /// Why a frame is not a usable JPEG.
    public enum Defect: Error, Sendable, Equatable, CustomStringConvertible {
        /// Fewer than `minimumLength` bytes (this many).
        case tooShort(Int)
        /// It does not start with SOI (FF D8).
        case missingStartOfImage
        /// A marker segment before the scan is cut off or is not a marker at this offset.
        case malformedSegment(offset: Int)
        /// The headers end without an SOS segment.
        case missingStartOfScan
        /// No EOI (FF D9) after the scan: the frame was cut short.
        case missingEndOfImage

        /// A short phrase for logs.
        public var description: String {
            switch self {
            case .tooShort(let count): "only \(count) bytes"
            case .missingStartOfImage: "no SOI marker at the start"
            case .malformedSegment(let offset): "malformed marker segment at byte \(offset)"
            case .missingStartOfScan: "no SOS marker"
            case .missingEndOfImage: "no EOI marker after the scan (truncated frame)"
            }
        }
    }

    /// Checks that `bytes` hold one whole JPEG, possibly followed by padding.
    public static func validate(_ bytes: [UInt8]) -> Result<Layout, Defect> {
        bytes.withUnsafeBytes { validate($0) }
    }

    /// Checks that `bytes` hold one whole JPEG, possibly followed by padding.
    ///
    /// Walks the marker segments from SOI to SOS (ITU-T T.81 section B.1.1), then searches back
    /// from the end for EOI: some cameras pad the buffer after EOI, and FF D9 cannot occur inside
    /// entropy-coded data, where every FF is followed by 00 or a restart marker (T.81 B.1.1.5).
    public static func validate(_ bytes: UnsafeRawBufferPointer) -> Result<Layout, Defect> {
        let count = bytes.count
        guard count >= minimumLength else { return .failure(.tooShort(count)) }
        guard bytes[0] == 0xFF, bytes[1] == 0xD8 else { return .failure(.missingStartOfImage) }
        var offset = 2
        var hasHuffmanTables = false
        var size: FrameSize?
        while true {
            guard offset < count, bytes[offset] == 0xFF else {
                return .failure(.malformedSegment(offset: offset))
            }
            let markerStart = offset
            // Any number of FF fill bytes may precede a marker (T.81 B.1.1.2).
            while offset < count, bytes[offset] == 0xFF { offset += 1 }
            guard offset < count else { return .failure(.missingStartOfScan) }
            let marker = bytes[offset]
            offset += 1
            switch marker {
            case 0x01, 0xD0...0xD7:
                // TEM and RSTn stand alone, without a length.
                continue
            case 0x00, 0xD8, 0xD9:
                // A stuffed zero, a second SOI or an EOI before any scan: not a frame.
                return .failure(.malformedSegment(offset: markerStart))
            default:
                break
            }
            guard offset + 2 <= count else { return .failure(.malformedSegment(offset: markerStart)) }
            let length = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
            guard length >= 2, offset + length <= count else {
                return .failure(.malformedSegment(offset: markerStart))
            }
            switch marker {
            case 0xC4:
                hasHuffmanTables = true
            case 0xC0...0xCF where marker != 0xC8 && marker != 0xCC && length >= 8:
                // SOFn: length, precision, then height and width (T.81 B.2.2).
                let frameSize = FrameSize(
                    width: Int(bytes[offset + 5]) << 8 | Int(bytes[offset + 6]),
                    height: Int(bytes[offset + 3]) << 8 | Int(bytes[offset + 4]))
                // T.81 allows no zero width; a zero height defers it to a DNL segment, which
                // libjpeg does not decode. Either way the frame has no size to be a picture of.
                guard frameSize.width > 0, frameSize.height > 0 else {
                    return .failure(.malformedSegment(offset: markerStart))
                }
                size = frameSize
            case 0xDA:
                let scanData = offset + length
                var end = count - 2
                while end >= scanData, !(bytes[end] == 0xFF && bytes[end + 1] == 0xD9) { end -= 1 }
                guard end >= scanData else { return .failure(.missingEndOfImage) }
                guard end + 2 >= minimumLength else { return .failure(.tooShort(end + 2)) }
                return .success(
                    Layout(
                        length: end + 2, startOfScan: offset - 2, hasHuffmanTables: hasHuffmanTables,
                        size: size))
            default:
                break
            }
            offset += length
        }
    }

    /// `jpeg` cut after its EOI, with the standard Huffman tables inserted before SOS if it has none.
    ///
    /// Throws the `Defect` when `jpeg` is not a whole JPEG.
    public static func insertingStandardHuffmanTables(_ jpeg: [UInt8]) throws -> [UInt8] {
        try jpeg.withUnsafeBytes { bytes in
            let layout = try validate(bytes).get()
            return completeCopy(of: bytes, layout: layout)
        }
    }

    /// The one copy of a validated frame that leaves the capture buffer: cut after EOI, with the
    /// standard Huffman tables inserted before SOS when the camera left them out.
    static func completeCopy(of bytes: UnsafeRawBufferPointer, layout: Layout) -> [UInt8] {
        if layout.hasHuffmanTables { return Array(bytes[0..<layout.length]) }
        let tables = standardHuffmanTableSegment
        return [UInt8](unsafeUninitializedCapacity: layout.length + tables.count) { buffer, initialized in
            let destination = UnsafeMutableRawBufferPointer(buffer)
            let scan = layout.startOfScan
            destination.copyMemory(from: UnsafeRawBufferPointer(rebasing: bytes[0..<scan]))
            tables.withUnsafeBytes {
                UnsafeMutableRawBufferPointer(rebasing: destination[scan...]).copyMemory(from: $0)
            }
            UnsafeMutableRawBufferPointer(rebasing: destination[(scan + tables.count)...]).copyMemory(
                from: UnsafeRawBufferPointer(rebasing: bytes[scan..<layout.length]))
            initialized = layout.length + tables.count
        }
    }

    /// One DHT segment holding the four tables of ITU-T T.81 Annex K.3 (tables K.3 to K.6).
    ///
    /// Motion JPEG frames, from UVC cameras as in AVI files (the OpenDML "AVI1" convention), may
    /// omit DHT and rely on these tables; ffmpeg's decoder assumes them and its mjpeg2jpeg filter
    /// inserts this same segment. libjpeg refuses a scan with no tables, so they are added back.
    static let standardHuffmanTableSegment: [UInt8] = {
        let tables: [(classAndID: UInt8, counts: [UInt8], values: [UInt8])] = [
            (0x00, luminanceDCCounts, dcValues),
            (0x10, luminanceACCounts, luminanceACValues),
            (0x01, chrominanceDCCounts, dcValues),
            (0x11, chrominanceACCounts, chrominanceACValues),
        ]
        var body: [UInt8] = []
        for table in tables {
            body.append(table.classAndID)
            body += table.counts
            body += table.values
        }
        let length = body.count + 2
        return [0xFF, 0xC4, UInt8(length >> 8), UInt8(length & 0xFF)] + body
    }()

    // Table K.3: luminance DC code lengths (how many codes of 1...16 bits).
    private static let luminanceDCCounts: [UInt8] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]
    // Table K.4: chrominance DC code lengths.
    private static let chrominanceDCCounts: [UInt8] = [0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0]
    // Both DC tables code the categories 0...11 in order.
    private static let dcValues: [UInt8] = Array(0...11)

    // Table K.5: luminance AC code lengths and values.
    private static let luminanceACCounts: [UInt8] = [0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D]
    private static let luminanceACValues: [UInt8] = [
        0x01, 0x02, 0x03, 0x00, 0x04, 0x11, 0x05, 0x12, 0x21, 0x31, 0x41, 0x06, 0x13, 0x51, 0x61, 0x07,
        0x22, 0x71, 0x14, 0x32, 0x81, 0x91, 0xA1, 0x08, 0x23, 0x42, 0xB1, 0xC1, 0x15, 0x52, 0xD1, 0xF0,
        0x24, 0x33, 0x62, 0x72, 0x82, 0x09, 0x0A, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x25, 0x26, 0x27, 0x28,
        0x29, 0x2A, 0x34, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48, 0x49,
        0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69,
        0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x83, 0x84, 0x85, 0x86, 0x87, 0x88, 0x89,
        0x8A, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7,
        0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3, 0xC4, 0xC5,
        0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA, 0xE1, 0xE2,
        0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
        0xF9, 0xFA,
    ]

    // Table K.6: chrominance AC code lengths and values.
    private static let chrominanceACCounts: [UInt8] = [0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77]
    private static let chrominanceACValues: [UInt8] = [
        0x00, 0x01, 0x02, 0x03, 0x11, 0x04, 0x05, 0x21, 0x31, 0x06, 0x12, 0x41, 0x51, 0x07, 0x61, 0x71,
        0x13, 0x22, 0x32, 0x81, 0x08, 0x14, 0x42, 0x91, 0xA1, 0xB1, 0xC1, 0x09, 0x23, 0x33, 0x52, 0xF0,
        0x15, 0x62, 0x72, 0xD1, 0x0A, 0x16, 0x24, 0x34, 0xE1, 0x25, 0xF1, 0x17, 0x18, 0x19, 0x1A, 0x26,
        0x27, 0x28, 0x29, 0x2A, 0x35, 0x36, 0x37, 0x38, 0x39, 0x3A, 0x43, 0x44, 0x45, 0x46, 0x47, 0x48,
        0x49, 0x4A, 0x53, 0x54, 0x55, 0x56, 0x57, 0x58, 0x59, 0x5A, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68,
        0x69, 0x6A, 0x73, 0x74, 0x75, 0x76, 0x77, 0x78, 0x79, 0x7A, 0x82, 0x83, 0x84, 0x85, 0x86, 0x87,
        0x88, 0x89, 0x8A, 0x92, 0x93, 0x94, 0x95, 0x96, 0x97, 0x98, 0x99, 0x9A, 0xA2, 0xA3, 0xA4, 0xA5,
        0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xB2, 0xB3, 0xB4, 0xB5, 0xB6, 0xB7, 0xB8, 0xB9, 0xBA, 0xC2, 0xC3,
        0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xD2, 0xD3, 0xD4, 0xD5, 0xD6, 0xD7, 0xD8, 0xD9, 0xDA,
        0xE2, 0xE3, 0xE4, 0xE5, 0xE6, 0xE7, 0xE8, 0xE9, 0xEA, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6, 0xF7, 0xF8,
        0xF9, 0xFA,
    ]
}
