/// Limits the parser enforces; each is a config key of the server.
public struct HTTPParserLimits: Sendable, Equatable {
    /// Request line plus header fields, in bytes (431 beyond; 414 when the request line alone is over `maxTargetBytes`).
    public var maxHeaderBytes: Int
    /// The request target, in bytes (414 beyond).
    public var maxTargetBytes: Int
    /// The decoded body, in bytes (413 beyond).
    public var maxBodyBytes: Int

    public init(maxHeaderBytes: Int = 16 * 1024, maxTargetBytes: Int = 8 * 1024, maxBodyBytes: Int = 1024 * 1024) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxTargetBytes = maxTargetBytes
        self.maxBodyBytes = maxBodyBytes
    }
}

/// Why a request could not be parsed; the connection answers with `status` and closes.
public enum HTTPParseError: Error, Equatable, Sendable {
    case malformed(String)
    case targetTooLong
    case headersTooLarge
    case bodyTooLarge
    case unsupportedTransferCoding(String)
    case unsupportedVersion(String)
    case unsupportedExpectation(String)
}

/// What the connection should do next.
public enum HTTPParserAction: Sendable {
    /// Read more bytes from the socket and `append` them.
    case needMoreData
    /// The head asked for `Expect: 100-continue` and its body has not arrived: send `100 Continue` now.
    case sendContinue
    /// A complete request; call `next()` again for pipelined ones.
    case request(HTTPRequest)
    /// The bytes are not a valid request; answer with the error's status and close.
    case error(HTTPParseError)
}

/// HTTP/1.1 request parser (RFC 9112) as a pure state machine: bytes in, actions out, no I/O.
public struct HTTPRequestParser: Sendable {
    public let limits: HTTPParserLimits

    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// Appends bytes read from the socket.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
    }

    /// Appends bytes read from the socket.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Advances as far as the buffered bytes allow.
    public mutating func next() -> HTTPParserAction {
        .needMoreData
    }

    /// Bytes received and not yet consumed by a complete request.
    public var bufferedByteCount: Int { 0 }
}
