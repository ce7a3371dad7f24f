import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterJobs
import ShutterSystem

/// `POST /snap`: a picture now, from a frame captured after the request, or a delayed one.
struct SnapRoutes: Sendable {
    let capture: CaptureService
    let catalog: MediaCatalog
    /// Delayed snaps are delayed jobs, created and shown the way `POST /jobs` does.
    let jobs: JobRoutes
    let clock: any Clock
    let snapTimeoutMilliseconds: Int

    /// Snaps by how they ended, for `/metrics`.
    let results: SnapResults
    /// Snaps in progress, held to `max_pending_snaps`.
    let admission: SnapAdmission

    func register(in router: inout Router) {
        router.add(.post, "/snap", scope: .snap, .task { request, _ in try await countedSnap(request) })
    }

    /// `snap`, counted by how it ended.
    func countedSnap(_ request: HTTPRequest) async throws -> HTTPResponse {
        do {
            let response = try await admission.admit(from: request.peer) { try await snap(request) }
            results.count(response.status.code < 300 ? .stored : .failed)
            return response
        } catch {
            results.count(SnapResults.Result(error))
            throw error
        }
    }

    /// Stores a picture from a frame captured after the request arrived (or, with `max_age_ms`,
    /// a recent one); with a `delay`, schedules a delayed job instead (see `delayedSnap`).
    func snap(_ request: HTTPRequest) async throws -> HTTPResponse {
        let arrived = clock.monotonicNow()
        let options = try SnapOptions(request)
        if let delay = options.delaySeconds {
            return try await delayedSnap(delaySeconds: delay, wait: options.wait, label: options.label)
        }
        let frame: EncodedFrame
        if let maxAge = options.maxAgeMilliseconds {
            frame = try await capture.recentFrame(
                maxAgeNanoseconds: UInt64(maxAge) * 1_000_000, now: arrived,
                timeoutMilliseconds: snapTimeoutMilliseconds, orNoSignal: false)
        } else {
            frame = try await capture.frame(
                capturedAtOrAfter: arrived, timeoutMilliseconds: snapTimeoutMilliseconds)
        }
        let framed = clock.monotonicNow()
        let record = try await catalog.add(
            jpeg: try capture.storedPicture(of: frame, label: options.label), takenAt: frame.wallMilliseconds,
            width: frame.width, height: frame.height,
            source: capture.cameraName, label: options.label)
        let stored = clock.monotonicNow()
        // A frame captured before the request (in hand, for max_age_ms) was encoded before it
        // too: this request spent nothing on its encode, and its wait is all the time to the frame.
        let encoded = frame.capturedAt < arrived ? 0 : frame.encodeNanoseconds
        let untilFramed = framed.nanoseconds(since: arrived)
        let waited = untilFramed > encoded ? untilFramed - encoded : 0
        return .json(
            .created, record.json,
            headers: [
                "Location": "/library/\(record.id)",
                // Where the time went, for clients and the snap benchmark (W3C Server Timing).
                "Server-Timing":
                    "wait;dur=\(milliseconds(waited)), encode;dur=\(milliseconds(encoded)), store;dur=\(milliseconds(stored.nanoseconds(since: framed)))",
            ])
    }

    /// A delayed job, answered 202 at once, or with `wait` 201 with its picture once taken.
    /// The label becomes the job's, which its picture then carries.
    func delayedSnap(delaySeconds: Double, wait: Bool, label: String?) async throws -> HTTPResponse {
        // Through the jobs parser, so a bad delay gets the same sentence as in `POST /jobs`.
        let labelField = label.map { #","label":"# + JSONString.quote($0) } ?? ""
        let body = #"{"kind":"delayed","delay":\#(delaySeconds)\#(labelField)}"#
        let snapshot = try await jobs.start(try JobSpec.parse(json: Array(body.utf8)))
        let id = snapshot.record.id
        guard wait else {
            return .json(.accepted, try await jobs.json(snapshot), headers: ["Location": "/jobs/\(id)"])
        }
        await jobs.jobs.waitUntilFinished(id: id)
        if let record = try await catalog.page(after: 0, limit: 1, jobID: id).items.first {
            return .json(.created, record.json, headers: ["Location": "/library/\(record.id)"])
        }
        let failure =
            try await jobs.jobs.job(id: id)?.lastFailure
            ?? ShotFailure(.cameraUnavailable, "the job ended without a picture")
        throw JobShotError(jobID: id, failure: failure)
    }

    private func milliseconds(_ nanoseconds: UInt64) -> String {
        Timestamp.thousandths(nanoseconds / 1000)
    }
}
