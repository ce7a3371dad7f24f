import ShutterOutbox
import ShutterSystem

/// An `HTTPTransport` that records each request, answers from a script (200 by default), and
/// serves files from memory.
public final class RecordingHTTPTransport: HTTPTransport {
    private let state = LockedValue(
        (
            requests: [HTTPTransferRequest](), answers: [Result<HTTPTransferResponse, TransferError>](),
            files: [String: [UInt8]]()
        ))

    public init() {}

    /// Every request sent, in order.
    public var requests: [HTTPTransferRequest] { state.withLock { $0.requests } }

    /// The next sends get these, in order; then 200.
    public func answer(_ answers: Result<HTTPTransferResponse, TransferError>...) {
        state.withLock { $0.answers += answers }
    }

    /// `readFile(atPath: path)` returns `bytes`; other paths have no file.
    public func setFile(_ path: String, _ bytes: [UInt8]) {
        state.withLock { $0.files[path] = bytes }
    }

    public func send(_ request: HTTPTransferRequest) async throws -> HTTPTransferResponse {
        let answer = state.withLock { state in
            state.requests.append(request)
            return state.answers.isEmpty
                ? .success(HTTPTransferResponse(status: 200)) : state.answers.removeFirst()
        }
        return try answer.get()
    }

    public func readFile(atPath path: String, maxBytes: Int) async throws -> [UInt8]? {
        state.withLock { $0.files[path] }
    }
}
