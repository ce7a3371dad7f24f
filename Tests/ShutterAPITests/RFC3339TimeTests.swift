import ShutterSystem
import Testing

@testable import ShutterAPI

/// `since` and `until` read RFC 3339 times, to the millisecond, rounding finer fractions up.
@Suite struct RFC3339TimeTests {
    /// 2026-12-02T10:00:00Z in wall milliseconds.
    static let ten: Int64 = 1_796_205_600_000

    @Test(
        arguments: [
            ("2026-12-02T10:00:00Z", 0), ("2026-12-02t10:00:00z", 0), ("2026-12-02 10:00:00Z", 0),
            ("2026-12-02T10:00:00.5Z", 500), ("2026-12-02T10:00:00.25Z", 250),
            ("2026-12-02T10:00:00.123Z", 123),
            ("2026-12-02T10:00:00.1230000Z", 123), ("2026-12-02T10:00:00.123000001Z", 124),
            ("2026-12-02T10:00:00.0001Z", 1), ("2026-12-02T11:00:00+01:00", 0),
            ("2026-12-02T11:00:00 01:00", 0),
            ("2026-12-02T05:30:00-04:30", 0), ("2026-12-02T10:00:00-00:00", 0),
            ("2026-12-02T10:59:60Z", 3_600_000), ("2026-12-03T00:00:00+14:00", 0),
        ] as [(String, Int64)])
    func readsTheInstant(_ text: String, _ offset: Int64) {
        #expect(RFC3339Time.milliseconds(text) == Self.ten + offset)
    }

    @Test func readsTheEpochLeapDaysAndTimesBefore1970() {
        #expect(RFC3339Time.milliseconds("1970-01-01T00:00:00Z") == 0)
        #expect(RFC3339Time.milliseconds("1969-12-31T23:59:59.999Z") == -1)
        #expect(RFC3339Time.milliseconds("2024-02-29T00:00:00Z") == 1_709_164_800_000)
        #expect(RFC3339Time.milliseconds("9999-12-31T23:59:59.999Z") == 253_402_300_799_999)
    }

    @Test(arguments: [
        "", "2026-12-02", "2026-12-02T10:00:00", "2026-12-02T10:00Z", "2026-12-02T10:00:00.Z",
        "2026-13-02T10:00:00Z", "2026-00-02T10:00:00Z", "2026-02-29T10:00:00Z", "2026-04-31T10:00:00Z",
        "2026-12-00T10:00:00Z", "2026-12-02T24:00:00Z", "2026-12-02T10:60:00Z", "2026-12-02T10:00:61Z",
        "2026-12-02T10:00:00+1:00", "2026-12-02T10:00:00+01", "2026-12-02T10:00:00+0100",
        "2026-12-02T10:00:00+24:00", "2026-12-02T10:00:00+01:60", "2026-12-02T10:00:00ZZ",
        "2026-12-02X10:00:00Z", "+2026-12-02T10:00:00Z", "26-12-02T10:00:00Z", "2026-12-02T10:00:00.5.5Z",
        "1796205600000", "now", "2026-12-02T10:00:00Z ", " 2026-12-02T10:00:00Z", "２026-12-02T10:00:00Z",
        "2026-12-02T10:00:00." + String(repeating: "0", count: 60) + "Z",
    ])
    func refuses(_ text: String) {
        #expect(RFC3339Time.milliseconds(text) == nil)
    }

    /// What the API writes (`taken_at`, `next` links) reads back as the same millisecond.
    @Test(arguments: [0, -1, 1, 999, 1_796_205_600_123, 253_402_300_799_999, -62_135_596_800_000] as [Int64])
    func readsWhatTheAPIWrites(_ milliseconds: Int64) {
        #expect(
            RFC3339Time.milliseconds(Timestamp.iso8601(millisecondsSince1970: milliseconds)) == milliseconds)
    }
}
