import FoundationEssentials
import ShutterJobs
import Testing

private let second: UInt64 = 1_000_000_000
// 30 frames per second.
private let frameInterval: UInt64 = 33_333_333

@Suite struct JobSpecValidationTests {
    private let limits = JobLimits(maxCount: 1000, maxActiveJobs: 2)

    private func problem(_ spec: JobSpec, nowWallMillis: Int64? = nil) -> JobSpecError? {
        do {
            try spec.validate(
                limits: limits, frameIntervalNanoseconds: frameInterval, nowWallMillis: nowWallMillis)
            return nil
        } catch {
            return error
        }
    }

    @Test func acceptsSensibleSpecs() {
        #expect(problem(JobSpec(kind: .interval(everyNanoseconds: second, end: .count(1000)))) == nil)
        #expect(problem(JobSpec(kind: .interval(everyNanoseconds: frameInterval, end: .count(10)))) == nil)
        #expect(problem(JobSpec(kind: .burst(count: 30))) == nil)
        #expect(problem(JobSpec(kind: .delayed(delayNanoseconds: 0))) == nil)
        #expect(
            problem(
                JobSpec(kind: .interval(everyNanoseconds: second, end: .until(wallMillis: 60_000))),
                nowWallMillis: 0) == nil)
    }

    @Test(arguments: [
        (JobSpec(kind: .interval(everyNanoseconds: frameInterval - 1, end: .count(5))), "every"),
        (JobSpec(kind: .interval(everyNanoseconds: second, end: .count(1001))), "count"),
        (JobSpec(kind: .interval(everyNanoseconds: second, end: .count(0))), "count"),
        (JobSpec(kind: .burst(count: 5000)), "count"),
        (
            JobSpec(kind: .interval(everyNanoseconds: second, end: .duration(nanoseconds: 1001 * second))),
            "duration"
        ),
        (JobSpec(kind: .interval(everyNanoseconds: second, end: .duration(nanoseconds: 0))), "duration"),
        (JobSpec(kind: .interval(everyNanoseconds: second, end: .unbounded)), "count"),
        (JobSpec(kind: .burst(count: 3), label: String(repeating: "x", count: 201)), "label"),
    ])
    func refusesNamingTheField(spec: JobSpec, field: String) {
        let error = problem(spec)
        #expect(error?.field == field)
        #expect(error?.description.contains("`\(field)`") == true)
    }

    @Test func refusesTimesInThePastOrOutOfOrder() {
        let past = JobSpec(kind: .burst(count: 3), startAtWallMillis: 1000)
        #expect(problem(past, nowWallMillis: 2000)?.field == "start_at")
        let untilBeforeStart = JobSpec(
            kind: .interval(everyNanoseconds: second, end: .until(wallMillis: 5000)), startAtWallMillis: 6000)
        #expect(problem(untilBeforeStart)?.field == "until")
        let tooLong = JobSpec(kind: .interval(everyNanoseconds: second, end: .until(wallMillis: 2_000_000)))
        #expect(problem(tooLong, nowWallMillis: 0)?.field == "until")
        // Year 9999 must be refused by the count limit, not trap on nanosecond overflow.
        let farFuture = JobSpec(
            kind: .interval(everyNanoseconds: second, end: .until(wallMillis: 253_402_300_799_000)))
        #expect(problem(farFuture, nowWallMillis: 0)?.field == "until")
    }

    @Test func unboundedNeedsPermission() throws {
        let spec = JobSpec(kind: .interval(everyNanoseconds: second, end: .unbounded))
        try spec.validate(limits: JobLimits(allowsUnbounded: true), frameIntervalNanoseconds: frameInterval)
    }

    @Test func limitsActiveJobs() throws {
        try limits.checkRoom(activeJobs: 1)
        #expect(throws: JobSpecError.tooManyActiveJobs(limit: 2)) { try limits.checkRoom(activeJobs: 2) }
        #expect(JobSpecError.tooManyActiveJobs(limit: 2).description.contains("at most 2"))
    }

    @Test func specsRoundTripThroughCodable() throws {
        let spec = JobSpec(
            kind: .interval(everyNanoseconds: second, end: .until(wallMillis: 5000)), startAtWallMillis: 1000,
            label: "roof")
        let data = try JSONEncoder().encode(spec)
        #expect(try JSONDecoder().decode(JobSpec.self, from: data) == spec)
    }
}
