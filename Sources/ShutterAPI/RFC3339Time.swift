import ShutterSystem

/// Reads RFC 3339 date-times (`2026-12-02T10:00:00Z`, `2026-12-02T11:00:00.250+01:00`) into wall
/// milliseconds, for `/library`'s `since` and `until`. Pure: no clock, no Foundation.
enum RFC3339Time {
    /// The longest text read: the longest useful form is 35 bytes (nine fraction digits and an
    /// offset); anything far longer is refused before it is looked at.
    static let maximumBytes = 64

    /// The first millisecond at or after the instant `text` names (a fraction finer than a
    /// millisecond rounds up), or nil if it is not an RFC 3339 date-time.
    ///
    /// Rounding up keeps both bounds exact on whole milliseconds: `taken_at >= t` and
    /// `taken_at < t` hold for an integer `taken_at` exactly when they hold against `ceil(t)`.
    /// Accepted besides RFC 3339 §5.6's grammar: a space for `T` (its §5.6 note allows it), and
    /// a space for an offset's `+`, which is what an unencoded `+` becomes in a query string.
    /// Second 60 (a leap second) is read as the first instant of the next minute.
    static func milliseconds(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= maximumBytes,
            bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            [UInt8(ascii: "T"), UInt8(ascii: "t"), UInt8(ascii: " ")].contains(bytes[10]),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let year = digits(bytes, 0, 4), let month = digits(bytes, 5, 2), let day = digits(bytes, 8, 2),
            let hour = digits(bytes, 11, 2), let minute = digits(bytes, 14, 2),
            let second = digits(bytes, 17, 2),
            (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second <= 60
        else { return nil }
        var index = 19
        var fractionMilliseconds: Int64 = 0
        if bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            var roundsUp = false
            while index < bytes.count, let digit = digit(bytes[index]) {
                let position = index - start
                if position < 3 {
                    fractionMilliseconds = fractionMilliseconds * 10 + digit
                } else if digit != 0 {
                    roundsUp = true
                }
                index += 1
            }
            let count = index - start
            guard count > 0 else { return nil }
            for _ in count..<max(count, 3) { fractionMilliseconds *= 10 }
            if roundsUp { fractionMilliseconds += 1 }
        }
        guard let offsetMinutes = offset(bytes[index...]) else { return nil }
        let days = Timestamp.daysSince1970(year: year, month: month, day: day)
        let local = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + fractionMilliseconds
        return local - offsetMinutes * 60_000
    }

    /// `Z`, or `+HH:MM` / `-HH:MM` (a space standing for `+`), in minutes east of UTC.
    private static func offset(_ bytes: ArraySlice<UInt8>) -> Int64? {
        let bytes = Array(bytes)
        if bytes == [UInt8(ascii: "Z")] || bytes == [UInt8(ascii: "z")] { return 0 }
        guard bytes.count == 6, bytes[3] == UInt8(ascii: ":"),
            let hours = digits(bytes, 1, 2), let minutes = digits(bytes, 4, 2), hours < 24, minutes < 60
        else { return nil }
        switch bytes[0] {
        case UInt8(ascii: "+"), UInt8(ascii: " "): return hours * 60 + minutes
        case UInt8(ascii: "-"): return -(hours * 60 + minutes)
        default: return nil
        }
    }

    private static func digit(_ byte: UInt8) -> Int64? {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") ? Int64(byte - UInt8(ascii: "0")) : nil
    }

    private static func digits(_ bytes: [UInt8], _ start: Int, _ width: Int) -> Int64? {
        var value: Int64 = 0
        for byte in bytes[start..<start + width] {
            guard let digit = digit(byte) else { return nil }
            value = value * 10 + digit
        }
        return value
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
