import COpenSSL

#if canImport(Glibc)
    import Glibc
#endif

/// A TLS failure: which step failed, on which file if any, and OpenSSL's own error (or the errno).
public struct TLSError: Error, CustomStringConvertible, Equatable, Sendable {
    /// What was being done, such as `"load certificate"` or `"handshake"`.
    public let operation: String
    /// The file involved (certificate or key), if any.
    public let path: String?
    /// The first code on OpenSSL's error queue (`ERR_get_error`), or 0 when the failure was a system call's.
    public let code: UInt
    /// OpenSSL's text for `code` (`ERR_error_string_n`), or `strerror` for a system call.
    public let reason: String

    public init(operation: String, path: String? = nil, code: UInt, reason: String) {
        self.operation = operation
        self.path = path
        self.code = code
        self.reason = reason
    }

    public var description: String {
        if let path { return "\(operation) \(path): \(reason)" }
        return "\(operation): \(reason)"
    }

    /// The error OpenSSL queued for the failed `operation` (the queue is emptied, so the
    /// next call on this thread starts clean); `fallback` when the queue is empty.
    static func fromQueue(_ operation: String, path: String? = nil, fallback: String = "unknown error")
        -> TLSError
    {
        let code = ERR_get_error()
        ERR_clear_error()
        guard code != 0 else { return TLSError(operation: operation, path: path, code: 0, reason: fallback) }
        var text = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &text, text.count)
        let reason = String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return TLSError(operation: operation, path: path, code: code, reason: reason)
    }
}
