/// JSON and decimal digits written straight into bytes, for the answers and lines made many
/// times a second: a `/library` page and its records, log lines, MJPEG part heads.
///
/// One escaping rule for every JSON string the daemon writes by hand (`JSONString.quote` and
/// the log lines use it too), so the same text is the same bytes in a page, an event and a log.
public enum JSONBytes {
    /// Appends `text` as a JSON string (RFC 8259 §7): `"`, `\` and control characters (DEL
    /// included, which a terminal showing a log would act on) escaped, the rest copied as it is.
    /// UTF-8 needs nothing: its multi-byte sequences never hold a byte below 0x80.
    public static func appendString(_ text: String, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\""))
        // Most text (hashes, names, times, labels) has nothing to escape: a native string's bytes
        // are scanned and copied whole, in place.
        let copied =
            text.utf8.withContiguousStorageIfAvailable { utf8 -> Bool in
                guard !utf8.contains(where: needsEscape) else { return false }
                bytes.append(contentsOf: utf8)
                return true
            } ?? false
        if !copied {
            for byte in text.utf8 {
                if needsEscape(byte) {
                    appendEscape(byte, to: &bytes)
                } else {
                    bytes.append(byte)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    @inline(__always)
    static func needsEscape(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") || byte < 0x20 || byte == 0x7F
    }

    private static func appendEscape(_ byte: UInt8, to bytes: inout [UInt8]) {
        bytes.append(UInt8(ascii: "\\"))
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"): bytes.append(byte)
        case UInt8(ascii: "\n"): bytes.append(UInt8(ascii: "n"))
        case UInt8(ascii: "\r"): bytes.append(UInt8(ascii: "r"))
        case UInt8(ascii: "\t"): bytes.append(UInt8(ascii: "t"))
        default:
            let hex: StaticString = "0123456789abcdef"
            bytes += "u00".utf8
            bytes.append(hex.utf8Start[Int(byte >> 4)])
            bytes.append(hex.utf8Start[Int(byte & 0x0F)])
        }
    }

    /// Appends `value` in decimal: the bytes of `String(value)`, without making the string.
    public static func appendInteger(_ value: Int64, to bytes: inout [UInt8]) {
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        appendDecimal(value.magnitude, to: &bytes)
    }

    /// Appends `value` in decimal, zero-padded on the left to at least `minimumDigits` (at most 20).
    public static func appendDecimal(_ value: UInt64, to bytes: inout [UInt8], minimumDigits: Int = 1) {
        let minimumDigits = min(minimumDigits, 20)
        // 24 bytes of scratch hold the 20 digits of any UInt64; filled from the right.
        var scratch: (UInt64, UInt64, UInt64) = (0, 0, 0)
        withUnsafeMutableBytes(of: &scratch) { buffer in
            var remaining = value
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(remaining % 10)
                remaining /= 10
            } while remaining > 0 || buffer.count - index < minimumDigits
            bytes.append(contentsOf: buffer[index...])
        }
    }
}
