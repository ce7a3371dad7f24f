import FoundationEssentials
import ShutterSystem
import Testing

@Suite struct JSONBytesTests {
    private static func string(_ text: String) -> String {
        var bytes: [UInt8] = []
        JSONBytes.appendString(text, to: &bytes)
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test func textWithNothingToEscapeIsCopiedWhole() {
        #expect(Self.string("") == #""""#)
        #expect(Self.string("front door / 玄関 😀") == "\"front door / 玄関 😀\"")
    }

    @Test func everyByteThatNeedsItIsEscapedAndTheRestKept() {
        #expect(Self.string("a\"b\\c\nd\re\tf\u{01}g\u{7F}h é") == #""a\"b\\c\nd\re\tf\u0001g\u007fh é""#)
    }

    /// What a JSON parser reads back is the text written, for every ASCII character, and no raw
    /// control character is left in the quoted bytes.
    @Test func everyControlCharacterReadsBackAsItself() throws {
        for scalar in (0..<0x80).compactMap(Unicode.Scalar.init) {
            let text = "x\(scalar)y"
            let quoted = Self.string(text)
            #expect(!quoted.utf8.dropFirst().dropLast().contains { $0 < 0x20 || $0 == 0x7F })
            #expect(
                try JSONDecoder().decode(String.self, from: Data(quoted.utf8)) == text, "U+\(scalar.value)")
        }
    }

    @Test func decimalsMatchTheStandardLibrary() {
        for value: UInt64 in [0, 9, 10, 99, 1000, 123_456_789, UInt64.max] {
            var bytes: [UInt8] = []
            JSONBytes.appendDecimal(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
        var padded: [UInt8] = []
        JSONBytes.appendDecimal(7, to: &padded, minimumDigits: 3)
        JSONBytes.appendDecimal(1234, to: &padded, minimumDigits: 3)
        JSONBytes.appendDecimal(5, to: &padded, minimumDigits: 99)
        #expect(
            String(decoding: padded, as: UTF8.self) == "0071234" + String(repeating: "0", count: 19) + "5")
    }

    @Test func integersMatchTheStandardLibrary() {
        for value: Int64 in [0, -1, 42, -9_876_543_210, .max, .min] {
            var bytes: [UInt8] = []
            JSONBytes.appendInteger(value, to: &bytes)
            #expect(String(decoding: bytes, as: UTF8.self) == String(value))
        }
    }
}
