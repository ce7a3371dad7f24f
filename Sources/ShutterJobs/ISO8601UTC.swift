import ShutterSystem

/// A strict parser for the UTC timestamps the jobs API accepts, since FoundationEssentials has no
/// DateFormatter: `2026-11-30T04:40:00Z` or `2026-11-30T04:40:00.000Z`, nothing else.
public enum ISO8601UTC {
    /// Milliseconds since 1970-01-01 UTC for `text`, or nil if it is not exactly one of the two forms.
    public static func parse(_ text: String) -> Int64? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20 || bytes.count == 24, bytes.last == UInt8(ascii: "Z"),
            bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
            bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            let year = number(bytes, 0, 4), let month = number(bytes, 5, 2), let day = number(bytes, 8, 2),
            let hour = number(bytes, 11, 2), let minute = number(bytes, 14, 2),
            let second = number(bytes, 17, 2)
        else { return nil }
        var millis: Int64 = 0
        if bytes.count == 24 {
            guard bytes[19] == UInt8(ascii: "."), let fraction = number(bytes, 20, 3) else { return nil }
            millis = fraction
        }
        // Leap seconds (second 60) are refused: the wall clock we compare against never shows them.
        guard year >= 1970, (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 60
        else { return nil }
        let days = Timestamp.daysSince1970(year: year, month: month, day: day)
        return ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    }

    private static func number(_ bytes: [UInt8], _ start: Int, _ width: Int) -> Int64? {
        var value: Int64 = 0
        for byte in bytes[start..<start + width] {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        return value
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }
}
