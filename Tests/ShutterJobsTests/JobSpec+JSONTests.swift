import ShutterJobs
import Testing

private let second: UInt64 = 1_000_000_000

private func parse(_ body: String) throws(JobSpecError) -> JobSpec {
    try JobSpec.parse(json: Array(body.utf8))
}

@Suite struct JobSpecJSONTests {
    @Test func parsesAnIntervalWithACount() throws {
        let spec = try parse(#"{"kind": "interval", "every": 5, "count": 100, "label": "sunset"}"#)
        #expect(
            spec == JobSpec(kind: .interval(everyNanoseconds: 5 * second, end: .count(100)), label: "sunset"))
    }

    @Test func parsesIntervalEndsAndStartAt() throws {
        let until = try parse(
            #"{"kind": "interval", "every": 0.5, "until": "2026-11-30T05:40:00Z", "start_at": "2026-11-30T04:40:00.250Z"}"#
        )
        #expect(
            until
                == JobSpec(
                    kind: .interval(everyNanoseconds: second / 2, end: .until(wallMillis: 1_796_017_200_000)),
                    startAtWallMillis: 1_796_013_600_250))
        let duration = try parse(#"{"kind": "interval", "every": 2, "duration": 60}"#)
        #expect(
            duration.kind == .interval(everyNanoseconds: 2 * second, end: .duration(nanoseconds: 60 * second))
        )
        let unbounded = try parse(#"{"kind": "interval", "every": 2}"#)
        #expect(unbounded.kind == .interval(everyNanoseconds: 2 * second, end: .unbounded))
    }

    @Test func parsesBurstAndDelayed() throws {
        #expect(try parse(#"{"kind": "burst", "count": 30}"#).kind == .burst(count: 30))
        #expect(
            try parse(#"{"kind": "delayed", "delay": 10}"#).kind == .delayed(delayNanoseconds: 10 * second))
    }

    @Test(arguments: [
        (
            #"{"kind": "interval", "every": 5, "count": 3, "colour": "red"}"#,
            JobSpecError.unknownField("colour")
        ),
        (#"{"kind": "timelapse", "every": 5}"#, .unknownKind("timelapse")),
        (#"{"every": 5}"#, .missingField("kind", kind: nil)),
        (#"{"kind": "interval", "count": 5}"#, .missingField("every", kind: "interval")),
        (#"{"kind": "delayed"}"#, .missingField("delay", kind: "delayed")),
        (#"{"kind": "burst", "count": 5, "every": 1}"#, .fieldNotAllowed("every", kind: "burst")),
        (#"{"kind": "delayed", "delay": 1, "count": 2}"#, .fieldNotAllowed("count", kind: "delayed")),
        (
            #"{"kind": "interval", "every": 1, "count": 2, "duration": 3}"#,
            .conflictingFields("count", "duration")
        ),
        (
            #"{"kind": "interval", "every": "5"}"#,
            .invalidValue(field: "every", accepted: "a number of seconds")
        ),
        (#"{"kind": "burst", "count": 2.5}"#, .invalidValue(field: "count", accepted: "a whole number")),
    ])
    func refusesBadBodiesByName(body: String, expected: JobSpecError) {
        #expect(throws: expected) { try parse(body) }
    }

    @Test func refusesNegativeAndZeroDurations() throws {
        #expect(throws: JobSpecError.self) { try parse(#"{"kind": "interval", "every": 0}"#) }
        #expect(throws: JobSpecError.self) { try parse(#"{"kind": "delayed", "delay": -1}"#) }
        #expect(try parse(#"{"kind": "delayed", "delay": 0}"#).kind == .delayed(delayNanoseconds: 0))
    }

    @Test(arguments: ["[1, 2]", "not json", "", "42"])
    func refusesBodiesThatAreNotObjects(body: String) {
        do {
            _ = try parse(body)
            Issue.record("parsed \(body)")
        } catch {
            guard case .malformedBody = error else {
                Issue.record("wrong error \(error)")
                return
            }
        }
    }

    @Test(arguments: [
        "2026-11-30", "2026-11-30T04:40:00", "2026-11-30T04:40:00+00:00", "2026-11-30 04:40:00Z",
        "2026-02-29T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-31T00:00:00Z", "2026-11-30T24:00:00Z",
        "2026-11-30T04:40:60Z", "2026-11-30T04:40:00.5Z", "2026-11-30T04:40:00.000000Z",
        "1969-12-31T23:59:59Z",
        "+026-11-30T04:40:00Z",
    ])
    func refusesBadDates(text: String) {
        do {
            _ = try parse(#"{"kind": "burst", "count": 3, "start_at": "\#(text)"}"#)
            Issue.record("parsed \(text)")
        } catch {
            #expect(error.field == "start_at")
            #expect(error.description.contains("2026-11-30T04:40:00Z"))
        }
        #expect(ISO8601UTC.parse(text) == nil)
    }

    @Test func parsesDatesExactly() {
        #expect(ISO8601UTC.parse("1970-01-01T00:00:00Z") == 0)
        #expect(ISO8601UTC.parse("2026-11-30T04:40:00Z") == 1_796_013_600_000)
        #expect(ISO8601UTC.parse("2026-11-30T04:40:00.000Z") == 1_796_013_600_000)
        #expect(ISO8601UTC.parse("2024-02-29T23:59:59.999Z") == 1_709_251_199_999)
    }

    @Test func aFieldGivenTwiceIsRefusedByName() {
        #expect(throws: JobSpecError.duplicateField("delay")) {
            try parse(#"{"kind": "delayed", "delay": 5, "delay": -1}"#)
        }
        #expect(JobSpecError.duplicateField("every").description.contains("`every`"))
    }
}
