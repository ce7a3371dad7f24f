/// Why a transfer got no answer, keeping libcurl's `CURLcode` and its message.
public struct TransferError: Error, Equatable, CustomStringConvertible {
    /// The `CURLcode` (libcurl-errors(3)); 0 for failures that are not libcurl's.
    public var code: Int32
    /// What failed, in words (libcurl's error buffer when it said something).
    public var message: String

    public init(code: Int32, message: String) {
        self.code = code
        self.message = message
    }

    /// `CURLE_OPERATION_TIMEDOUT`.
    public var isTimeout: Bool { code == 28 }

    public var description: String { "transfer failed: \(message) (CURLcode \(code))" }

    /// The transfer loop stopped before the transfer finished.
    public static let stopped = TransferError(code: 0, message: "the transfer loop stopped")
    /// More transfers waited than the loop accepts.
    public static let queueFull = TransferError(code: 0, message: "too many transfers waiting")
}

/// A destination that answered, but not with a success.
public struct DestinationRefusal: Error, Equatable, CustomStringConvertible {
    public var status: Int
    /// The start of the answer's body, as text (S3 puts its error code there).
    public var detail: String

    public init(status: Int, detail: String) {
        self.status = status
        self.detail = detail
    }

    public var description: String {
        detail.isEmpty ? "answered \(status)" : "answered \(status): \(detail)"
    }
}
