import CTurboJPEG

/// A failed TurboJPEG call: which call, and the text libjpeg-turbo gave for it.
public struct JPEGError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The call that failed, such as `"tjCompressFromYUVPlanes"`.
    public let call: String
    /// What went wrong, from `tjGetErrorStr2` or from our own argument checks.
    public let message: String

    /// An error for `call` with `message`.
    public init(call: String, message: String) {
        self.call = call
        self.message = message
    }

    /// The error `handle` last recorded (or the library-wide one when `handle` is nil,
    /// as after a failed `tjInit*`).
    init(call: String, handle: tjhandle?) {
        self.init(call: call, message: String(cString: tjGetErrorStr2(handle)))
    }

    /// `call: message`.
    public var description: String { "\(call): \(message)" }
}
