import ShutterHTTP
import ShutterSystem
import Testing

@Suite struct RepresentationValidatorsTests {
    let validators = RepresentationValidators(etag: "\"7-1000\"", lastModified: 1_700_000_000, length: 1000)

    private func decide(_ headers: HTTPHeaders) -> RepresentationDecision { validators.evaluate(headers) }

    @Test func noHeadersMeansWhole() {
        #expect(decide([:]) == .whole)
    }

    @Test func byteRanges() {
        #expect(decide(["Range": "bytes=0-99"]) == .partial(0..<100))
        #expect(decide(["Range": "bytes=900-"]) == .partial(900..<1000))
        #expect(decide(["Range": "bytes=-10"]) == .partial(990..<1000))
        #expect(decide(["Range": "bytes=-5000"]) == .partial(0..<1000))
        #expect(decide(["Range": "bytes=990-5000"]) == .partial(990..<1000))
        #expect(decide(["Range": "bytes=999-999"]) == .partial(999..<1000))
        #expect(decide(["Range": "bytes=1000-"]) == .rangeNotSatisfiable)
        #expect(decide(["Range": "bytes=-0"]) == .rangeNotSatisfiable)
        // Malformed or multiple ranges are ignored: the whole picture (RFC 9110 §14.2).
        #expect(decide(["Range": "bytes=5-2"]) == .whole)
        #expect(decide(["Range": "bytes=a-b"]) == .whole)
        #expect(decide(["Range": "items=0-1"]) == .whole)
        #expect(decide(["Range": "bytes=0-1,5-6"]) == .whole)
    }

    @Test func hugeNumbersDoNotOverflow() {
        #expect(decide(["Range": "bytes=0-9223372036854775807"]) == .partial(0..<1000))
        #expect(decide(["Range": "bytes=9223372036854775807-"]) == .rangeNotSatisfiable)
        #expect(decide(["Range": "bytes=-9223372036854775807"]) == .partial(0..<1000))
        #expect(decide(["Range": "bytes=0-99999999999999999999999"]) == .whole)
        for date in [
            "Sun, 06 Nov 1994 9223372036854775807:00:00 GMT", "Sun, 06 Nov 99999999999999999 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:999999999999999999:37 GMT", "Sun, 99 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT", "Sun, 06 Nov 1994 08:49 GMT", "Sun, 6 Nov 1994 08:49:37 GMT",
        ] {
            #expect(Timestamp.parseHTTPDate(date) == nil, "\(date)")
            #expect(decide(["If-Modified-Since": date]) == .whole)
            #expect(decide(["If-Unmodified-Since": date]) == .whole)
            #expect(decide(["Range": "bytes=0-1", "If-Range": date]) == .whole)
        }
    }

    @Test func ifNoneMatchAndIfModifiedSince() {
        #expect(decide(["If-None-Match": "\"7-1000\""]) == .notModified)
        #expect(decide(["If-None-Match": "W/\"7-1000\""]) == .notModified)
        #expect(decide(["If-None-Match": "\"x\", \"7-1000\""]) == .notModified)
        #expect(decide(["If-None-Match": "*"]) == .notModified)
        #expect(decide(["If-None-Match": "\"other\""]) == .whole)
        let same = Timestamp.httpDate(secondsSince1970: 1_700_000_000)
        let earlier = Timestamp.httpDate(secondsSince1970: 1_699_999_999)
        #expect(decide(["If-Modified-Since": same]) == .notModified)
        #expect(decide(["If-Modified-Since": earlier]) == .whole)
        // If-None-Match wins over If-Modified-Since (RFC 9110 §13.1.3).
        #expect(decide(["If-None-Match": "\"other\"", "If-Modified-Since": same]) == .whole)
    }

    @Test func preconditions() {
        #expect(decide(["If-Match": "\"other\""]) == .preconditionFailed)
        #expect(decide(["If-Match": "\"7-1000\""]) == .whole)
        // If-Match uses the strong comparison.
        #expect(decide(["If-Match": "W/\"7-1000\""]) == .preconditionFailed)
        let earlier = Timestamp.httpDate(secondsSince1970: 1_699_999_999)
        #expect(decide(["If-Unmodified-Since": earlier]) == .preconditionFailed)
    }

    @Test func ifRangeOnlyAppliesToTheSameRepresentation() {
        #expect(decide(["Range": "bytes=0-9", "If-Range": "\"7-1000\""]) == .partial(0..<10))
        #expect(decide(["Range": "bytes=0-9", "If-Range": "\"old\""]) == .whole)
        let same = Timestamp.httpDate(secondsSince1970: 1_700_000_000)
        #expect(decide(["Range": "bytes=0-9", "If-Range": same]) == .partial(0..<10))
    }

    @Test func httpDatesRoundTrip() {
        #expect(Timestamp.httpDate(secondsSince1970: 784_111_777) == "Sun, 06 Nov 1994 08:49:37 GMT")
        #expect(Timestamp.parseHTTPDate("Sun, 06 Nov 1994 08:49:37 GMT") == 784_111_777)
        // Every weekday and month name, a leap day, the last second of a year (checked with date -u).
        let known: [(Int64, String)] = [
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"), (951_782_400, "Tue, 29 Feb 2000 00:00:00 GMT"),
            (1_798_761_599, "Thu, 31 Dec 2026 23:59:59 GMT"),
            (4_102_444_800, "Fri, 01 Jan 2100 00:00:00 GMT"),
        ]
        for (seconds, text) in known {
            #expect(Timestamp.httpDate(secondsSince1970: seconds) == text)
            #expect(Timestamp.parseHTTPDate(text) == seconds)
        }
        for day in Int64(0)..<400 {
            let seconds = 1_767_225_600 + day * 86_400 + 3_661
            #expect(Timestamp.parseHTTPDate(Timestamp.httpDate(secondsSince1970: seconds)) == seconds)
        }
        #expect(Timestamp.parseHTTPDate("yesterday") == nil)
        #expect(Timestamp.iso8601(millisecondsSince1970: 951_782_400_123) == "2000-02-29T00:00:00.123Z")
    }
}
