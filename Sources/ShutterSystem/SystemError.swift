#if canImport(Glibc)
    import Glibc
#endif

/// A failed system call: which call, and the errno it left.
public struct SystemError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The errno value the call set.
    public let errno: Int32
    /// The call that failed, such as `"open"` or `"VIDIOC_QBUF"`.
    public let call: String

    public init(errno: Int32, call: String) {
        self.errno = errno
        self.call = call
    }

    /// The text `strerror` gives for `errno`.
    public var reason: String { String(cString: strerror(errno)) }

    public var description: String { "\(call): \(reason) (errno \(errno))" }
}

/// What a non-blocking call did: finished with a value, or would have blocked.
public enum IOResult<Value> {
    case processed(Value)
    case wouldBlock
}

/// Runs one system call, retrying on `EINTR`, and throws `SystemError` on failure.
///
/// The single wrapper every module uses (the swift-nio habit): `EINTR` is never
/// an error, and `EBADF`/`EFAULT` are programming errors that must not be hidden.
// @inlinable: specialised for each caller's integer type, instead of generic dispatch on every
// system call (visible in profiles of the capture and event-loop threads).
@inlinable
public func syscall<T: FixedWidthInteger>(
    _ call: @autoclosure () -> String, _ body: () throws -> T
) throws -> T {
    while true {
        let result = try body()
        if result != -1 { return result }
        let code = errno
        if code == EINTR { continue }
        precondition(code != EBADF && code != EFAULT, "\(call()) failed with \(code): a programming error")
        throw SystemError(errno: code, call: call())
    }
}

/// Like `syscall`, but `EAGAIN`/`EWOULDBLOCK` come back as `.wouldBlock` instead of an error.
@inlinable
public func nonBlockingSyscall<T: FixedWidthInteger>(
    _ call: @autoclosure () -> String, _ body: () throws -> T
) throws -> IOResult<T> {
    while true {
        let result = try body()
        if result != -1 { return .processed(result) }
        let code = errno
        if code == EINTR { continue }
        if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
        precondition(code != EBADF && code != EFAULT, "\(call()) failed with \(code): a programming error")
        throw SystemError(errno: code, call: call())
    }
}
