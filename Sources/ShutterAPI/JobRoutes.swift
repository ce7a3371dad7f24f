import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterJobRunner
import ShutterJobs
import ShutterSystem

/// `/jobs`: delayed, interval and burst captures, run by the job service.
struct JobRoutes: Sendable {
    let jobs: JobService
    let catalog: MediaCatalog
    /// For the camera's frame interval, the fastest a job may ask for.
    let capture: CaptureService
    /// `wait=` on one job.
    let longPoll: LongPoll

    /// The states `state_not=` may name.
    static let jobStates: Set<String> = ["scheduled", "running", "done", "cancelled", "failed"]

    /// The most picture ids one job's JSON lists; `/library?job={id}` pages through the rest.
    static let maximumJobPictureIDs = 1000

    func register(in router: inout Router) {
        router.add(.post, "/jobs", scope: .snap, .task { request, _ in try await createJob(request) })
        router.add(.get, "/jobs", scope: .view, .task { request, _ in try await listJobs(request) })
        router.add(
            .get, "/jobs/{id}", scope: .view,
            .task { request, parameters in try await showJob(request, parameters) })
        router.add(
            .delete, "/jobs/{id}", scope: .admin,
            .task { request, parameters in try await cancelJob(request, parameters) })
    }

    /// `POST /jobs`: schedules the job the JSON body describes.
    func createJob(_ request: HTTPRequest) async throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        let snapshot = try await start(try JobSpec.parse(json: request.body))
        return .json(
            .created, try await json(snapshot), headers: ["Location": "/jobs/\(snapshot.record.id)"])
    }

    /// `GET /jobs`: jobs, newest first.
    func listJobs(_ request: HTTPRequest) async throws -> HTTPResponse {
        let query = try QueryParameters(request, allowed: ["limit"])
        let limit = try query.integer("limit", in: 1...LibraryRoutes.maximumPageSize) ?? 50
        var items = "["
        for (index, snapshot) in try await jobs.jobs(limit: Int(limit)).enumerated() {
            if index > 0 { items += "," }
            items += try await json(snapshot)
        }
        var object = JSONObjectWriter()
        object.rawField("items", items + "]")
        return .json(.ok, object.finished(), headers: ["Cache-Control": "no-cache"])
    }

    /// `GET /jobs/{id}`: one job, with its pictures in the order taken; with `wait=S`, once its
    /// state is not `state_not` (by default the state it has when asked: its next change), or
    /// after S seconds as it is then.
    func showJob(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try parameters.positiveID(of: "job")
        let query = try QueryParameters(request, allowed: ["wait", "state_not"])
        let wait = try query.integer("wait", in: 0...LongPoll.maximumWaitSeconds)
        let stateNot = try query.text("state_not")
        if let stateNot, !Self.jobStates.contains(stateNot) {
            throw HTTPError(
                .badRequest, "invalid parameter",
                detail:
                    "state_not must be one of \(Self.jobStates.sorted().joined(separator: ", ")), not '\(stateNot.prefix(40))'"
            )
        }
        var avoided = stateNot
        let found = try await longPoll.answer(
            waitingUpTo: wait, for: [.jobCreated, .jobUpdated, .jobEnded],
            where: { event in Self.isEvent(event, ofJob: id) },
            look: { try await jobs.job(id: id) },
            isReady: { snapshot in
                guard let snapshot else { return true }
                if avoided == nil { avoided = snapshot.record.state }
                return snapshot.record.state != avoided
            })
        guard let snapshot = found else { throw Self.notFound(id) }
        return .json(.ok, try await json(snapshot), headers: ["Cache-Control": "no-cache"])
    }

    /// Whether a `job.*` event is about job `id`: its data is the job's row, whose first field is
    /// the id (`JobRecord.eventJSON`), so a prefix tells without parsing every event of a burst.
    static func isEvent(_ event: CatalogEvent, ofJob id: Int64) -> Bool {
        event.data.hasPrefix("{\"id\":\(id),")
    }

    /// `DELETE /jobs/{id}`: cancels the job; the pictures it took stay.
    func cancelJob(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try parameters.positiveID(of: "job")
        _ = try QueryParameters(request, allowed: [])
        try requireEmptyBody(request)
        guard let snapshot = try await jobs.cancel(id: id) else { throw Self.notFound(id) }
        return .json(.ok, try await json(snapshot))
    }

    /// Creates the job; a refused spec, too many jobs or a full disk answer for themselves.
    func start(_ spec: JobSpec) async throws -> JobSnapshot {
        let interval = UInt64(1_000_000_000 / max(1, capture.status.mode.fps))
        return try await jobs.create(spec: spec, frameIntervalNanoseconds: interval)
    }

    /// The job as the API shows it, with the ids of its first pictures in the order taken.
    func json(_ snapshot: JobSnapshot) async throws -> String {
        let record = snapshot.record
        var object = JSONObjectWriter()
        object.field("id", record.id)
        object.field("url", "/jobs/\(record.id)")
        if let spec = snapshot.spec {
            switch spec.kind {
            case .delayed(let delay):
                object.field("kind", "delayed")
                object.field("delay", Self.seconds(delay))
            case .burst(let count):
                object.field("kind", "burst")
                object.field("count", count)
            case .interval(let every, let end):
                object.field("kind", "interval")
                object.field("every", Self.seconds(every))
                switch end {
                case .count(let count): object.field("count", count)
                case .until(let wallMillis):
                    object.field("until", Timestamp.iso8601(millisecondsSince1970: wallMillis))
                case .duration(let nanoseconds): object.field("duration", Self.seconds(nanoseconds))
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
        object.field("last_failure", snapshot.lastFailure?.message)
        object.field("last_failure_kind", snapshot.lastFailure?.kind.rawValue)
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

    private static func seconds(_ nanoseconds: UInt64) -> Double {
        Double(nanoseconds) / 1e9
    }

    private static func notFound(_ id: Int64) -> HTTPError {
        HTTPError(.notFound, detail: "no job with id \(id)")
    }
}
