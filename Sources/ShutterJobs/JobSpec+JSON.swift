import FoundationEssentials
import ShutterSystem

extension JobSpec {
    /// Parses a request body such as `{"kind": "interval", "every": 5, "count": 100}`.
    ///
    /// `every`, `delay` and `duration` are seconds; `until` and `start_at` are ISO 8601 UTC
    /// (see `ISO8601UTC`). Unknown fields and fields the kind does not take are refused by name.
    public static func parse(json body: [UInt8]) throws(JobSpecError) -> JobSpec {
        // JSONDecoder keeps the first of two equal keys; a body that says two things is refused.
        if let duplicate = JSONDuplicateKeys.first(in: body) { throw .duplicateField(duplicate) }
        let request: JobRequestBody
        do {
            request = try JSONDecoder().decode(JobRequestBody.self, from: Data(body))
        } catch let error as JobSpecError {
            throw error
        } catch {
            throw .malformedBody("it is not valid JSON")
        }
        return try request.spec()
    }
}

/// Every field the jobs API knows, all optional, so the rules can name what is wrong.
private struct JobRequestBody: Decodable {
    var kind: String?
    var every: Double?
    var count: Int?
    var until: String?
    var duration: Double?
    var delay: Double?
    var startAt: String?
    var label: String?

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    private static let known: Set<String> = [
        "kind", "every", "count", "until", "duration", "delay", "start_at", "label",
    ]

    init(from decoder: any Decoder) throws {
        let container: KeyedDecodingContainer<AnyKey>
        do {
            container = try decoder.container(keyedBy: AnyKey.self)
        } catch {
            throw JobSpecError.malformedBody("it is not an object")
        }
        // Sorted so the error names the same field every time for the same body.
        if let unknown = container.allKeys.map(\.stringValue).sorted().first(where: {
            !Self.known.contains($0)
        }) {
            throw JobSpecError.unknownField(unknown)
        }
        kind = try Self.field(container, "kind", String.self, accepted: "a string")
        every = try Self.field(container, "every", Double.self, accepted: "a number of seconds")
        count = try Self.field(container, "count", Int.self, accepted: "a whole number")
        until = try Self.field(container, "until", String.self, accepted: "a string")
        duration = try Self.field(container, "duration", Double.self, accepted: "a number of seconds")
        delay = try Self.field(container, "delay", Double.self, accepted: "a number of seconds")
        startAt = try Self.field(container, "start_at", String.self, accepted: "a string")
        label = try Self.field(container, "label", String.self, accepted: "a string")
    }

    private static func field<T: Decodable>(
        _ container: KeyedDecodingContainer<AnyKey>, _ name: String, _ type: T.Type, accepted: String
    ) throws -> T? {
        do {
            return try container.decodeIfPresent(type, forKey: AnyKey(stringValue: name))
        } catch {
            throw JobSpecError.invalidValue(field: name, accepted: accepted)
        }
    }

    func spec() throws(JobSpecError) -> JobSpec {
        guard let kind else { throw .missingField("kind", kind: nil) }
        let startAtWallMillis = try startAt.map { (text) throws(JobSpecError) in
            try Self.wallMillis(text, field: "start_at")
        }
        let parsedKind: JobSpec.Kind
        switch kind {
        case "delayed":
            try refuse(
                [
                    "every": every != nil, "count": count != nil, "until": until != nil,
                    "duration": duration != nil,
                ], kind: kind)
            guard let delay else { throw .missingField("delay", kind: kind) }
            parsedKind = .delayed(
                delayNanoseconds: try Self.nanoseconds(delay, field: "delay", allowsZero: true))
        case "burst":
            try refuse(
                [
                    "every": every != nil, "until": until != nil, "duration": duration != nil,
                    "delay": delay != nil,
                ], kind: kind)
            guard let count else { throw .missingField("count", kind: kind) }
            parsedKind = .burst(count: count)
        case "interval":
            try refuse(["delay": delay != nil], kind: kind)
            guard let every else { throw .missingField("every", kind: kind) }
            let ends = [("count", count != nil), ("until", until != nil), ("duration", duration != nil)]
                .filter(\.1).map(\.0)
            if ends.count > 1 { throw .conflictingFields(ends[0], ends[1]) }
            let end: JobSpec.IntervalEnd
            if let count {
                end = .count(count)
            } else if let until {
                end = .until(wallMillis: try Self.wallMillis(until, field: "until"))
            } else if let duration {
                end = .duration(
                    nanoseconds: try Self.nanoseconds(duration, field: "duration", allowsZero: false))
            } else {
                end = .unbounded
            }
            parsedKind = .interval(
                everyNanoseconds: try Self.nanoseconds(every, field: "every", allowsZero: false), end: end)
        default:
            throw .unknownKind(kind)
        }
        return JobSpec(kind: parsedKind, startAtWallMillis: startAtWallMillis, label: label)
    }

    private func refuse(_ fields: [String: Bool], kind: String) throws(JobSpecError) {
        if let name = fields.filter(\.value).keys.sorted().first {
            throw .fieldNotAllowed(name, kind: kind)
        }
    }

    // A year of seconds is far beyond any sensible job and keeps nanosecond arithmetic from overflowing.
    private static let maxSeconds: Double = 366 * 86400

    private static func nanoseconds(_ seconds: Double, field: String, allowsZero: Bool) throws(JobSpecError)
        -> UInt64
    {
        guard seconds.isFinite, allowsZero ? seconds >= 0 : seconds > 0, seconds <= maxSeconds else {
            throw .invalidValue(
                field: field,
                accepted:
                    "a \(allowsZero ? "non-negative" : "positive") number of seconds, at most \(Int(maxSeconds))"
            )
        }
        return UInt64((seconds * 1e9).rounded())
    }

    private static func wallMillis(_ text: String, field: String) throws(JobSpecError) -> Int64 {
        guard let millis = ISO8601UTC.parse(text) else {
            throw .invalidValue(
                field: field,
                accepted: "an ISO 8601 UTC time like 2026-11-30T04:40:00Z or 2026-11-30T04:40:00.000Z")
        }
        return millis
    }
}
