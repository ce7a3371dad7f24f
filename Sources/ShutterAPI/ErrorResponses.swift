import ShutterCamera
import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterJobs

// The one place where domain errors become HTTP answers. Route handlers throw what the services
// throw; the server turns any `HTTPResponseError` into its JSON response, and anything else into
// a logged 500 that reveals nothing (the hummingbird habit). A 500 from a conformance below is
// logged by the server too, with its cause, since its detail only points to the log.

extension CaptureError: HTTPResponseError {
    /// Every capture failure is the camera being unavailable for now: try again shortly.
    public var status: HTTPStatus { .serviceUnavailable }
    public var error: String { "camera unavailable" }
    public var detail: String { description }
    public var headers: HTTPHeaders { ["Retry-After": "1"] }
}

extension CatalogError: HTTPResponseError {
    public var status: HTTPStatus {
        switch self {
        case .storageFull: .insufficientStorage
        case .invalidArgument: .badRequest
        case .io, .database, .dataDirectoryInUse, .unsupportedSchemaVersion: .internalServerError
        }
    }

    public var error: String {
        switch self {
        case .storageFull: "storage full"
        case .invalidArgument: "invalid parameter"
        case .io, .database, .dataDirectoryInUse, .unsupportedSchemaVersion: "internal server error"
        }
    }

    public var detail: String {
        switch self {
        case .storageFull(let cause):
            "nothing was stored: \(cause.reason); nothing stored before was affected"
        case .invalidArgument(let detail): detail
        // The text names files and SQL: it goes to the log, not to the client.
        case .io, .database, .dataDirectoryInUse, .unsupportedSchemaVersion:
            "the catalog failed; see the server log"
        }
    }
}

extension JobSpecError: HTTPResponseError {
    public var status: HTTPStatus {
        if case .tooManyActiveJobs = self { return .conflict }
        return .badRequest
    }

    public var error: String {
        if case .tooManyActiveJobs = self { return "too many active jobs" }
        return "invalid job"
    }

    public var detail: String { description }
}

extension CameraError: HTTPResponseError {
    /// A control the camera refused is the client's to fix; anything else is the device failing.
    public var status: HTTPStatus {
        if case .invalidControl = self { return .badRequest }
        return .internalServerError
    }

    public var error: String {
        if case .invalidControl = self { return "invalid control" }
        return "internal server error"
    }

    public var detail: String {
        if case .invalidControl(let detail) = self { return detail }
        return "the camera failed; see the server log"
    }
}

/// A job that ended without its picture (`POST /snap` with `delay` and `wait`), answered by the
/// kind of its last failure.
struct JobShotError: HTTPResponseError {
    let jobID: Int64
    let failure: ShotFailure

    var status: HTTPStatus {
        switch failure.kind {
        case .cameraUnavailable: .serviceUnavailable
        case .storageFull: .insufficientStorage
        case .failed: .internalServerError
        }
    }

    var error: String {
        switch failure.kind {
        case .cameraUnavailable: "camera unavailable"
        case .storageFull: "storage full"
        case .failed: "internal server error"
        }
    }

    var detail: String {
        switch failure.kind {
        case .cameraUnavailable, .storageFull: "job \(jobID): \(failure.message)"
        case .failed: "job \(jobID) ended without a picture; see the server log"
        }
    }

    var headers: HTTPHeaders {
        failure.kind == .cameraUnavailable ? ["Retry-After": "1"] : [:]
    }
}

extension SnapAdmission.LimitReached: HTTPResponseError {
    /// The server is busy storing other snaps, not the request wrong: try again shortly.
    public var status: HTTPStatus { .serviceUnavailable }
    public var error: String { "too busy" }
    public var detail: String {
        perClient
            ? "\(limit) snaps from this address are in progress (a quarter of max_pending_snaps)"
            : "\(limit) snaps are in progress (max_pending_snaps)"
    }
    public var headers: HTTPHeaders { ["Retry-After": "1"] }
}

extension ChangeFeedError: HTTPResponseError {
    /// A limit on open streams or waiters: the server is busy, not the request wrong.
    public var status: HTTPStatus { .serviceUnavailable }
    public var error: String { "too busy" }
    public var detail: String {
        switch self {
        case .tooManyEventStreams(let limit): "\(limit) event streams are open (max_event_streams)"
        case .tooManyWaiters(let limit): "\(limit) requests are waiting (max_long_polls)"
        }
    }
    public var headers: HTTPHeaders { ["Retry-After": "1"] }
}
