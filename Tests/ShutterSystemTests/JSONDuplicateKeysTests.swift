import ShutterSystem
import Testing

private func duplicate(_ json: String) -> String? { JSONDuplicateKeys.first(in: Array(json.utf8)) }

@Suite struct JSONDuplicateKeysTests {
    @Test func findsAKeyGivenTwiceInOneObject() {
        #expect(duplicate(#"{"delay":5,"delay":-1}"#) == "delay")
        #expect(duplicate(#" { "a" : 1 , "b" : [1, {"c": 2}], "b": 3 } "#) == "b")
        #expect(duplicate(#"{"outer": {"x": 1, "x": 2}}"#) == "x")
        #expect(duplicate(#"[{"x": 1}, {"x": 1, "x": 2}]"#) == "x")
    }

    @Test func comparesKeysAfterUnescaping() {
        #expect(duplicate(#"{"a":1,"\u0061":2}"#) == "a")
        #expect(duplicate(#"{"😀":1,"\ud83d\ude00":2}"#) == "😀")
        #expect(duplicate(#"{"a\"b":1,"a\u0022b":2}"#) == "a\"b")
    }

    @Test func equalKeysInDifferentObjectsAndStringValuesAreNotDuplicates() {
        #expect(duplicate(#"{"a": {"a": 1}, "b": {"a": 2}}"#) == nil)
        #expect(duplicate(#"{"a": "a", "b": "a", "c": ["a", "a"]}"#) == nil)
        #expect(duplicate(#"{"a": "}", "b": "{\"a\":1,\"a\":2}"}"#) == nil)
        #expect(duplicate(#"{}"#) == nil)
    }

    @Test func malformedJSONIsLeftToTheDecoder() {
        #expect(duplicate(#"{"a": "unterminated"#) == nil)
        #expect(duplicate(#"}}]]"#) == nil)
        #expect(duplicate(String(repeating: "[", count: 100_000)) == nil)
    }
}
