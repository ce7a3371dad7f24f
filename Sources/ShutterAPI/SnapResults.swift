import ShutterHTTP
import ShutterSystem

/// How `POST /snap` requests ended, counted for `/metrics`.
public final class SnapResults: Sendable {
    /// One way a snap ends.
    public enum Result: String, CaseIterable, Sendable {
        /// Stored (201), or a delayed job accepted (202).
        case stored
        /// The camera gave no frame in time, or is gone (503).
        case cameraUnavailable = "camera_unavailable"
        /// The disk is full or at `min_free_bytes` (507).
        case storageFull = "storage_full"
        /// `max_pending_snaps` snaps were in progress already (503).
        case busy
        /// The request was refused (4xx).
        case refused
        /// Anything else (500).
        case failed

        /// The result an error thrown by the snap handler stands for.
        init(_ error: any Error) {
            if error is SnapAdmission.LimitReached {
                self = .busy
                return
            }
            // By the status the error is answered with (ErrorResponses.swift decides it).
            guard let error = error as? any HTTPResponseError else {
                self = .failed
                return
            }
            switch error.status.code {
            case 503: self = .cameraUnavailable
            case 507: self = .storageFull
            case ..<500: self = .refused
            default: self = .failed
            }
        }
    }

    private let counters: [Result: AtomicCounter] = Dictionary(
        uniqueKeysWithValues: Result.allCases.map { ($0, AtomicCounter()) })

    public init() {}

    func count(_ result: Result) {
        counters[result]!.add()
    }

    /// How many snaps ended with `result`.
    public func count(of result: Result) -> UInt64 {
        counters[result]!.count
    }
}
