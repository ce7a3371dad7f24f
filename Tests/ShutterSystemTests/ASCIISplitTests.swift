import ShutterSystem
import Testing

// Swift Testing, as every suite here: XCTest's own objects leak under LeakSanitizer, and its
// suppressions (Tests/asan/lsan.supp) would hide a leak in an XCTest test (docs/sanitizers.md).
struct ASCIISplitTests {
    /// Every piece, for every option, is the one the standard library's `Character` split gives
    /// (on text where the two readings agree: no combining mark after a separator).
    @Test func agreesWithTheStandardSplitOnEveryOption() {
        let texts = [
            "", "/", "//", "/media/12.jpg", "a=1&b=2&&c", "&a&", "no separator", "é/ü/日本", "x,,y, z ,",
            "::1", "a:b:c", "1.2.3.4",
        ]
        for text in texts {
            for separator in ["/", "&", ",", ":", "."] {
                let byte = UInt8(ascii: Unicode.Scalar(separator)!)
                for omitting in [true, false] {
                    for maxSplits in [0, 1, 2, Int.max] {
                        let expected = text.split(
                            separator: Character(separator), maxSplits: maxSplits,
                            omittingEmptySubsequences: omitting)
                        let actual = text.splitASCII(
                            byte, maxSplits: maxSplits, omittingEmptySubsequences: omitting)
                        #expect(
                            actual == expected,
                            "\(text) split on \(separator) max \(maxSplits) omitting \(omitting)")
                        #expect(
                            Substring(text).splitASCII(
                                byte, maxSplits: maxSplits, omittingEmptySubsequences: omitting)
                                == expected)
                    }
                }
            }
        }
    }

    @Test func piecesOfASubstringKeepItsIndices() {
        let text = "GET /a/b?x=1"
        let query = text[text.firstIndex(of: "?")!...].dropFirst()
        #expect(query.splitASCII(UInt8(ascii: "=")) == ["x", "1"])
        #expect(text[query.startIndex...] == "x=1")
    }
}
