import FoundationEssentials
import ShutterCatalog
import ShutterHTTP
import ShutterJobs
import ShutterSystem

extension ShutterAPI {
    /// The most picture ids one job's JSON lists; `/library?job={id}` pages through the rest.
    static let maximumJobPictureIDs = 1000

    /// `POST /jobs`: schedules a delayed, interval or burst job described by the JSON body.
    func createJob(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        let snapshot = try await startJob(try parseJobSpec(request.body))
        return .json(
            .created, try await jobJSON(snapshot), headers: ["Location": "/jobs/\(snapshot.record.id)"])
    }

    /// `GET /jobs`: jobs, newest first.
    func listJobs(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = try QueryParameters(request, allowed: ["limit"])
        let limit = try query.integer("limit", in: 1...Self.maximumPageSize) ?? 50
        var items = "["
        for (index, snapshot) in try await jobs.jobs(limit: Int(limit)).enumerated() {
            if index > 0 { items += "," }
            items += try await jobJSON(snapshot)
        }
        var object = JSONObjectWriter()
        object.rawField("items", items + "]")
        return .json(.ok, object.finished(), headers: ["Cache-Control": "no-cache"])
    }

    /// `GET /jobs/{id}`: one job, with its pictures in the order taken.
    func showJob(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try jobID(parameters)
        _ = try QueryParameters(request, allowed: [])
        guard let snapshot = try await jobs.job(id: id) else { throw jobNotFound(id) }
        return .json(.ok, try await jobJSON(snapshot), headers: ["Cache-Control": "no-cache"])
    }

    /// `DELETE /jobs/{id}`: cancels the job; the pictures it took stay.
    func cancelJob(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try jobID(parameters)
        _ = try QueryParameters(request, allowed: [])
        try requireEmptyBody(request)
        guard let snapshot = try await jobs.cancel(id: id) else { throw jobNotFound(id) }
        return .json(.ok, try await jobJSON(snapshot))
    }

    /// `POST /snap` with a delay: a delayed job, answered 202 at once, or with `wait` 201 with its picture.
    func delayedSnap(delaySeconds: Double, wait: Bool) async throws -> HTTPResponse {
        // Through the jobs parser, so a bad delay gets the same sentence as in `POST /jobs`.
        let body = #"{"kind":"delayed","delay":\#(delaySeconds)}"#
        let snapshot = try await startJob(try parseJobSpec(Array(body.utf8)))
        let id = snapshot.record.id
        guard wait else {
            return .json(.accepted, try await jobJSON(snapshot), headers: ["Location": "/jobs/\(id)"])
        }
        await jobs.waitUntilFinished(id: id)
        if let record = try await catalog.page(after: 0, limit: 1, jobID: id).items.first {
            return .json(.created, record.json, headers: ["Location": "/library/\(record.id)"])
        }
        let failure = try await jobs.job(id: id)?.record.lastFailure ?? "the job ended without a picture"
        if failure.hasPrefix("storage full") {
            throw HTTPError(.insufficientStorage, "storage full", detail: "job \(id): \(failure)")
        }
        throw HTTPError(
            .serviceUnavailable, "camera unavailable", detail: "job \(id): \(failure)",
            headers: ["Retry-After": "1"])
    }

    private func parseJobSpec(_ body: [UInt8]) throws -> JobSpec {
        do {
            return try JobSpec.parse(json: body)
        } catch {
            throw HTTPError(.badRequest, "invalid job", detail: error.description)
        }
    }

    private func startJob(_ spec: JobSpec) async throws -> JobSnapshot {
        let interval = UInt64(1_000_000_000 / max(1, capture.status.mode.fps))
        do {
            return try await jobs.create(spec: spec, frameIntervalNanoseconds: interval)
        } catch let error as JobSpecError {
            if case .tooManyActiveJobs = error {
                throw HTTPError(.conflict, "too many active jobs", detail: error.description)
            }
            throw HTTPError(.badRequest, "invalid job", detail: error.description)
        } catch CatalogError.storageFull(let error) {
            throw HTTPError(
                .insufficientStorage, "storage full", detail: "the job could not be stored: \(error.reason)")
        }
    }

    /// The job as the API shows it, with the ids of its first pictures in the order taken.
    func jobJSON(_ snapshot: JobSnapshot) async throws -> String {
        let record = snapshot.record
        var object = JSONObjectWriter()
        object.field("id", record.id)
        object.field("url", "/jobs/\(record.id)")
        if let spec = snapshot.spec {
            switch spec.kind {
            case .delayed(let delay):
                object.field("kind", "delayed")
                object.field("delay", seconds(delay))
            case .burst(let count):
                object.field("kind", "burst")
                object.field("count", count)
            case .interval(let every, let end):
                object.field("kind", "interval")
                object.field("every", seconds(every))
                switch end {
                case .count(let count): object.field("count", count)
                case .until(let wallMillis):
                    object.field("until", Timestamp.iso8601(millisecondsSince1970: wallMillis))
                case .duration(let nanoseconds): object.field("duration", seconds(nanoseconds))
                case .unbounded: break
                }
            }
            object.field(
                "start_at", spec.startAtWallMillis.map { Timestamp.iso8601(millisecondsSince1970: $0) })
        }
        object.field("label", record.label)
        object.field("state", record.state)
        object.field("taken", record.taken)
        object.field("missed", record.missed)
        object.field("last_failure", record.lastFailure)
        object.field(
            "next_shot_at", snapshot.nextShotAtWall.map { Timestamp.iso8601(millisecondsSince1970: $0) })
        object.field("created_at", Timestamp.iso8601(millisecondsSince1970: record.createdAt))
        object.field("started_at", Timestamp.iso8601(millisecondsSince1970: record.startedAt))
        object.field("finished_at", record.finishedAt.map { Timestamp.iso8601(millisecondsSince1970: $0) })
        let page = try await catalog.page(after: 0, limit: Self.maximumJobPictureIDs, jobID: record.id)
        object.rawField("picture_ids", "[" + page.items.map { String($0.id) }.joined(separator: ",") + "]")
        object.field("more_pictures", page.hasMore)
        object.field("pictures", "/library?job=\(record.id)")
        return object.finished()
    }

    private func seconds(_ nanoseconds: UInt64) -> Double {
        Double(nanoseconds) / 1e9
    }

    private func jobID(_ parameters: RouteParameters) throws -> Int64 {
        guard let text = parameters["id"], let id = Int64(text), id > 0, text.first != "+", text.first != "0"
        else {
            throw HTTPError(
                .notFound,
                detail: "no job with id '\(parameters["id"] ?? "")'; ids are positive whole numbers")
        }
        return id
    }

    private func jobNotFound(_ id: Int64) -> HTTPError {
        HTTPError(.notFound, detail: "no job with id \(id)")
    }
}

/// The options of `POST /snap`, from the query (`?delay=5&wait=true`) or a JSON body
/// (`{"delay": 5, "wait": true}`), not both.
struct SnapOptions {
    /// Seconds until the picture is taken, or nil to take it now.
    var delaySeconds: Double?
    /// Whether to answer with the picture once it is taken rather than with the job at once.
    var wait = false
    /// Accept a frame captured up to this long before the request (an instant answer when one
    /// is at hand), instead of waiting for the next frame.
    var maxAgeMilliseconds: Int?

    /// Throws 400 for an unknown parameter or field, a malformed value, or options given twice.
    init(_ request: HTTPRequest) throws {
        let query = try QueryParameters(request, allowed: ["delay", "wait", "max_age_ms"])
        let fromQuery = try query.boolean("wait")
        let delayText = try query.text("delay")
        let maxAgeFromQuery = try query.integer("max_age_ms", in: 0...60000)
        let compact = String(decoding: request.body, as: UTF8.self).filter { !$0.isWhitespace }
        var body: [String: JSONValue] = [:]
        if !compact.isEmpty, compact != "{}" {
            guard let object = try? JSONDecoder().decode([String: JSONValue].self, from: Data(request.body))
            else {
                throw HTTPError(
                    .badRequest, "unexpected body",
                    detail:
                        #"POST /snap takes no body, {} or {"delay": seconds, "wait": true|false, "max_age_ms": ms}"#
                )
            }
            if let unknown = object.keys.sorted().first(where: {
                !["delay", "wait", "max_age_ms"].contains($0)
            }) {
                throw HTTPError(
                    .badRequest, "unknown field",
                    detail: "unknown field `\(unknown)`; POST /snap accepts delay, wait and max_age_ms")
            }
            body = object
        }
        if (delayText != nil && body["delay"] != nil) || (fromQuery != nil && body["wait"] != nil)
            || (maxAgeFromQuery != nil && body["max_age_ms"] != nil)
        {
            throw HTTPError(
                .badRequest, "repeated option",
                detail: "give each of delay, wait and max_age_ms in the query or in the body, not both")
        }
        switch body["max_age_ms"] {
        case nil: maxAgeMilliseconds = maxAgeFromQuery.map { Int($0) }
        case let value?:
            guard let milliseconds = value.integer, (0...60000).contains(milliseconds) else {
                throw HTTPError(
                    .badRequest, "invalid value",
                    detail: "`max_age_ms` must be a whole number from 0 to 60000")
            }
            maxAgeMilliseconds = milliseconds
        }
        switch body["wait"] {
        case nil: wait = fromQuery ?? false
        case .bool(let value)?: wait = value
        default: throw HTTPError(.badRequest, "invalid value", detail: "`wait` must be true or false")
        }
        let delay: Double?
        switch body["delay"] {
        case nil: delay = delayText.map { Double($0) ?? .nan }
        case .number(let value)?: delay = value
        default: delay = .nan
        }
        if let delay, !delay.isFinite || delay < 0 {
            throw HTTPError(
                .badRequest, "invalid value", detail: "`delay` must be a non-negative number of seconds")
        }
        delaySeconds = delay
    }
}
