import ShutterSystem
import Testing

@Suite struct JSONStringTests {
    @Test func textWithNothingToEscapeIsQuotedWhole() {
        #expect(JSONString.quote("") == #""""#)
        #expect(JSONString.quote("2026-12-02T04:40:00.123Z") == #""2026-12-02T04:40:00.123Z""#)
        #expect(JSONString.quote("front door / 玄関 😀") == "\"front door / 玄関 😀\"")
    }

    @Test func quotesBackslashesAndControlCharactersAreEscaped() {
        #expect(JSONString.quote(#"a"b"#) == #""a\"b""#)
        #expect(JSONString.quote(#"C:\dir"#) == #""C:\\dir""#)
        #expect(JSONString.quote("line\nnext\r\tend") == #""line\nnext\r\tend""#)
        #expect(JSONString.quote("bell\u{07} 😀") == "\"bell\\u0007 😀\"")
        #expect(JSONString.quote("\u{1F}") == #""\u001f""#)
    }
}
