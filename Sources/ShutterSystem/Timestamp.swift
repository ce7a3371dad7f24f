/// Formats wall-clock times as ISO 8601 UTC, without Foundation's formatters
/// (FoundationEssentials has no DateFormatter).
public enum Timestamp {
    /// `2026-11-30T03:40:00.123Z` for the given milliseconds since 1970-01-01 UTC.
    public static func iso8601(millisecondsSince1970 millis: Int64) -> String {
        guard let fields = ISO8601Fields(millisecondsSince1970: millis) else {
            return wideISO8601(millisecondsSince1970: millis)
        }
        // Every record of a `/library` page carries one: written digit by digit into its 24 bytes,
        // where the interpolation of seven padded strings was a tenth of the page's CPU.
        return String(unsafeUninitializedCapacity: ISO8601Fields.count) { fields.write(into: $0) }
    }

    /// Appends `iso8601(millisecondsSince1970:)` to `bytes`, without making the string: a
    /// `/library` page writes one per record.
    public static func appendISO8601(millisecondsSince1970 millis: Int64, to bytes: inout [UInt8]) {
        guard let fields = ISO8601Fields(millisecondsSince1970: millis) else {
            bytes += wideISO8601(millisecondsSince1970: millis).utf8
            return
        }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: ISO8601Fields.count) { buffer in
            bytes.append(contentsOf: buffer[..<fields.write(into: buffer)])
        }
    }

    /// A year outside 0...9999, which the fixed 24 bytes cannot hold (never a picture's time).
    private static func wideISO8601(millisecondsSince1970 millis: Int64) -> String {
        let (days, msOfDay) = floorDivide(millis, 86_400_000)
        let (year, month, day) = civilDate(daysSince1970: days)
        let (hour, minute) = (msOfDay / 3_600_000, msOfDay / 60000 % 60)
        let (second, ms) = (msOfDay / 1000 % 60, msOfDay % 1000)
        return
            "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2))T\(pad(hour, 2)):\(pad(minute, 2)):\(pad(second, 2)).\(pad(ms, 3))Z"
    }

    /// `value` thousandths as a decimal with three places: `1234` is `1.234` (microseconds as
    /// milliseconds, milliseconds as seconds, in logs and `Server-Timing`).
    public static func thousandths(_ value: UInt64) -> String {
        "\(value / 1000).\(String(value % 1000 + 1000).dropFirst())"
    }

    /// RFC 9110 IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`) for HTTP date headers.
    public static func httpDate(secondsSince1970 seconds: Int64) -> String {
        let (days, secOfDay) = floorDivide(seconds, 86400)
        let (year, month, day) = civilDate(daysSince1970: days)
        let weekday = Int(floorDivide(days, 7).1)
        guard (0...9999).contains(year) else {
            let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
            let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
            return
                "\(weekdays[weekday]), \(pad(day, 2)) \(months[Int(month) - 1]) \(year) \(pad(secOfDay / 3600, 2)):\(pad(secOfDay / 60 % 60, 2)):\(pad(secOfDay % 60, 2)) GMT"
        }
        // Every served file's `Last-Modified`: written byte by byte into its 29 bytes, where the
        // interpolation of seven strings (and two arrays made on each call) cost 1% of a media request.
        return String(unsafeUninitializedCapacity: 29) { buffer in
            var out = FixedWriter(buffer: buffer)
            func name(_ table: StaticString, _ entry: Int) {
                table.withUTF8Buffer { bytes in
                    for offset in 0..<3 { out.mark(Unicode.Scalar(bytes[entry * 3 + offset])) }
                }
            }
            func digits(_ value: Int64, _ width: Int) { out.digits(value, width) }
            func mark(_ character: Unicode.Scalar) { out.mark(character) }
            name("ThuFriSatSunMonTueWed", weekday)
            mark(",")
            mark(" ")
            digits(day, 2)
            mark(" ")
            name("JanFebMarAprMayJunJulAugSepOctNovDec", Int(month) - 1)
            mark(" ")
            digits(year, 4)
            mark(" ")
            digits(secOfDay / 3600, 2)
            mark(":")
            digits(secOfDay / 60 % 60, 2)
            mark(":")
            digits(secOfDay % 60, 2)
            mark(" ")
            mark("G")
            mark("M")
            mark("T")
            return out.index
        }
    }

    /// Parses an IMF-fixdate back to seconds since 1970, or nil if it is not one.
    ///
    /// Every field is bounded by its width in RFC 9110 §5.6.7 before any arithmetic,
    /// because the text comes from clients and must not overflow.
    public static func parseHTTPDate(_ text: String) -> Int64? {
        let parts = text.split(separator: " ")
        guard parts.count == 6, parts[5] == "GMT",
            let day = number(parts[1], digits: 2), (1...31).contains(day),
            let year = number(parts[3], digits: 4)
        else { return nil }
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        guard let monthIndex = months.firstIndex(of: String(parts[2])) else { return nil }
        let time = parts[4].split(separator: ":", omittingEmptySubsequences: false)
        guard time.count == 3, let h = number(time[0], digits: 2), let m = number(time[1], digits: 2),
            let s = number(time[2], digits: 2), h < 24, m < 60, s < 61
        else {
            return nil
        }
        let days = daysSince1970(year: year, month: Int64(monthIndex + 1), day: day)
        return days * 86400 + h * 3600 + m * 60 + s
    }

    /// A decimal field of exactly `digits` ASCII digits.
    private static func number(_ text: Substring, digits: Int) -> Int64? {
        guard text.utf8.count == digits, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
            return nil
        }
        return Int64(text)
    }

    /// Days from 1970-01-01 to the given proleptic Gregorian date (Howard Hinnant's algorithm).
    public static func daysSince1970(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400).0
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The proleptic Gregorian date of a day count from 1970-01-01 (Howard Hinnant's algorithm).
    public static func civilDate(daysSince1970 days: Int64) -> (Int64, Int64, Int64) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097).0
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// `a / b` and `a % b` rounded towards minus infinity, so times before 1970 and negative
    /// offsets land on the right day.
    public static func floorDivide(_ a: Int64, _ b: Int64) -> (quotient: Int64, remainder: Int64) {
        let q = a / b
        let r = a % b
        return r < 0 ? (q - 1, r + b) : (q, r)
    }

    /// `value` in decimal, with leading zeros to `width` digits.
    public static func pad(_ value: Int64, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }
}

/// The parts of an ISO 8601 time whose year has four digits, written in its fixed 24 bytes.
private struct ISO8601Fields {
    static let count = 24
    let year, month, day, hour, minute, second, millisecond: Int64

    init?(millisecondsSince1970 millis: Int64) {
        let (days, msOfDay) = Timestamp.floorDivide(millis, 86_400_000)
        (year, month, day) = Timestamp.civilDate(daysSince1970: days)
        guard (0...9999).contains(year) else { return nil }
        hour = msOfDay / 3_600_000
        minute = msOfDay / 60000 % 60
        second = msOfDay / 1000 % 60
        millisecond = msOfDay % 1000
    }

    /// Writes the 24 bytes at the start of `buffer`; returns how many.
    func write(into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
        var out = FixedWriter(buffer: buffer)
        out.digits(year, 4)
        out.mark("-")
        out.digits(month, 2)
        out.mark("-")
        out.digits(day, 2)
        out.mark("T")
        out.digits(hour, 2)
        out.mark(":")
        out.digits(minute, 2)
        out.mark(":")
        out.digits(second, 2)
        out.mark(".")
        out.digits(millisecond, 3)
        out.mark("Z")
        return out.index
    }
}

/// Writes ASCII into a buffer of known size: the fixed-width times above, digit by digit.
private struct FixedWriter {
    let buffer: UnsafeMutableBufferPointer<UInt8>
    var index = 0

    init(buffer: UnsafeMutableBufferPointer<UInt8>) { self.buffer = buffer }

    /// `value` in `width` decimal digits, zero-padded (its lowest digits if it has more).
    mutating func digits(_ value: Int64, _ width: Int) {
        var rest = value
        for offset in stride(from: width - 1, through: 0, by: -1) {
            buffer[index + offset] = UInt8(ascii: "0") + UInt8(rest % 10)
            rest /= 10
        }
        index += width
    }

    mutating func mark(_ character: Unicode.Scalar) {
        buffer[index] = UInt8(truncatingIfNeeded: character.value)
        index += 1
    }
}
