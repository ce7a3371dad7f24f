import ShutterSystem

/// Limits the parser enforces; each is a config key of the server.
public struct HTTPParserLimits: Sendable, Equatable {
    /// Request line plus header fields plus the empty line ending them, in bytes (431 beyond).
    /// Also bounds each chunk-size line (400 beyond) and a chunked body's trailer section (431 beyond).
    public var maxHeaderBytes: Int
    /// The request target as sent, in bytes (414 beyond).
    public var maxTargetBytes: Int
    /// The decoded body, in bytes (413 beyond).
    public var maxBodyBytes: Int

    /// Limits with the server's defaults: 16 KiB head, 8 KiB target, 1 MiB body.
    public init(
        maxHeaderBytes: Int = 16 * 1024, maxTargetBytes: Int = 8 * 1024, maxBodyBytes: Int = 1024 * 1024
    ) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxTargetBytes = maxTargetBytes
        self.maxBodyBytes = maxBodyBytes
    }
}

/// Why a request could not be parsed; the connection answers with `status` and closes.
public enum HTTPParseError: Error, Equatable, Sendable {
    /// The bytes break RFC 9112's grammar or its framing rules; the text says which rule.
    case malformed(String)
    /// The request target is over `maxTargetBytes`.
    case targetTooLong
    /// The head, or a chunked body's trailer section, is over `maxHeaderBytes`.
    case headersTooLarge
    /// The body is, or is announced to be, over `maxBodyBytes`.
    case bodyTooLarge
    /// A transfer coding other than `chunked`, named.
    case unsupportedTransferCoding(String)
    /// A protocol version other than HTTP/1.x, as sent.
    case unsupportedVersion(String)
    /// An `Expect` value other than `100-continue`, as sent.
    case unsupportedExpectation(String)

    /// The status to answer with before closing the connection.
    public var status: HTTPStatus {
        switch self {
        case .malformed: return .badRequest
        case .targetTooLong: return .uriTooLong
        case .headersTooLarge: return .requestHeaderFieldsTooLarge
        case .bodyTooLarge: return .contentTooLarge
        case .unsupportedTransferCoding: return .notImplemented
        case .unsupportedVersion: return .httpVersionNotSupported
        case .unsupportedExpectation: return .expectationFailed
        }
    }

    /// One sentence for the client saying what was wrong.
    public var detail: String {
        switch self {
        case .malformed(let reason):
            return "The request is not valid HTTP/1.1: \(reason)."
        case .targetTooLong:
            return "The request target is longer than this server accepts."
        case .headersTooLarge:
            return "The request line and header fields are larger than this server accepts."
        case .bodyTooLarge:
            return "The request body is larger than this server accepts."
        case .unsupportedTransferCoding(let coding):
            return "The transfer coding '\(coding)' is not supported; only 'chunked' is."
        case .unsupportedVersion(let version):
            return "The protocol version '\(version)' is not supported; use HTTP/1.1 or HTTP/1.0."
        case .unsupportedExpectation(let expectation):
            return "The expectation '\(expectation)' cannot be met; only '100-continue' is supported."
        }
    }
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
///
/// Bytes live in one buffer read through indices; consumed bytes are dropped only once they
/// outweigh what must be moved, so a pipelined burst costs linear time.
public struct HTTPRequestParser: Sendable {
    /// The limits this parser enforces.
    public let limits: HTTPParserLimits

    private var buffer: [UInt8] = []
    // Index in `buffer` where the current request began. It goes negative when compaction drops
    // already-decoded bytes of a chunked body, so `bufferedByteCount` still counts them.
    private var requestStart = 0
    // Next byte to examine: the head scan's position, or the next body byte.
    private var cursor = 0
    // Start of the line being scanned (head, chunk-size or trailer line).
    private var lineStart = 0
    private var headScan = HeadScan()
    private var state: State = .head
    // The decoded body so far, for the request in `state`.
    private var body: [UInt8] = []
    private var continueSent = false
    // Bytes of the trailer section so far, bounded by `maxHeaderBytes`.
    private var trailerBytes = 0

    // Compaction moves the unconsumed tail to the front; it waits until the consumed prefix
    // is both this large and at least half the buffer, so its cost is amortised.
    private static let compactionThreshold = 4096
    // After a large body, an emptied buffer gives its memory back rather than keep it per connection.
    private static let retainedCapacity = 64 * 1024

    /// A parser with an empty buffer, waiting for a request line.
    public init(limits: HTTPParserLimits = HTTPParserLimits()) {
        self.limits = limits
    }

    /// Appends bytes read from the socket.
    public mutating func append(_ bytes: UnsafeRawBufferPointer) {
        // After an error the connection closes; what follows is never parsed.
        if case .failed = state { return }
        compactIfWorthwhile()
        buffer.append(contentsOf: bytes)
    }

    /// Appends bytes read from the socket.
    public mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Advances as far as the buffered bytes allow.
    public mutating func next() -> HTTPParserAction {
        switch state {
        case .failed(let error):
            return .error(error)
        case .head:
            return readHead()
        case .fixedLengthBody(let head, let length):
            return readFixedLengthBody(head, length: length)
        case .chunkedBody(let head, let phase):
            return readChunkedBody(head, phase: phase)
        }
    }

    /// Bytes received and not yet consumed by a complete request.
    public var bufferedByteCount: Int { buffer.count - requestStart }

    /// The request whose body is being read, without its body (nil otherwise): what it asks
    /// can be refused before a megabyte of body is buffered for it.
    public var headAwaitingBody: HTTPRequest? {
        switch state {
        case .fixedLengthBody(let head, _), .chunkedBody(let head, _):
            return HTTPRequest(
                method: head.method, target: head.target, version: head.version, headers: head.headers)
        case .head, .failed: return nil
        }
    }

    /// Whether a request's head has been read and its body is being waited for.
    public var isReadingBody: Bool {
        switch state {
        case .fixedLengthBody, .chunkedBody: return true
        case .head, .failed: return false
        }
    }
}

// MARK: - States

extension HTTPRequestParser {
    private enum State {
        case head
        case fixedLengthBody(RequestHead, length: Int)
        case chunkedBody(RequestHead, ChunkedBodyPhase)
        case failed(HTTPParseError)
    }

    /// Where the chunked decoder is (RFC 9112 §7.1).
    private enum ChunkedBodyPhase {
        case sizeLine
        case data(remaining: Int)
        case dataEnd
        case trailerSection
    }

    /// Progress of the search for the empty line that ends the head, kept across `append`s.
    private struct HeadScan {
        var requestLineStarted = false
        var requestLineEnded = false
        var targetStart: Int?
        var targetEnded = false
    }

    private enum HeadScanResult {
        case needMoreData
        case complete(headEnd: Int)
        case failed(HTTPParseError)
    }

    private enum LineScanResult {
        case found(lineFeed: Int)
        case needMoreData
        case tooLong
    }

    /// How the body's length is known (RFC 9112 §6.3).
    private enum BodyFraming {
        case length(Int)
        case chunked
    }
}

// MARK: - Buffer bookkeeping

extension HTTPRequestParser {
    /// Bytes before this index are no longer needed.
    private var discardableIndex: Int {
        switch state {
        case .head: return requestStart
        case .fixedLengthBody: return cursor
        case .chunkedBody(_, .data), .chunkedBody(_, .dataEnd): return cursor
        case .chunkedBody(_, .sizeLine), .chunkedBody(_, .trailerSection): return lineStart
        case .failed: return 0
        }
    }

    private mutating func compactIfWorthwhile() {
        let dropCount = discardableIndex
        guard dropCount > 0 else { return }
        if dropCount == buffer.count {
            buffer.removeAll(keepingCapacity: buffer.capacity <= Self.retainedCapacity)
        } else if dropCount >= Self.compactionThreshold && dropCount * 2 >= buffer.count {
            buffer.removeSubrange(..<dropCount)
        } else {
            return
        }
        requestStart -= dropCount
        cursor -= dropCount
        lineStart -= dropCount
        if let targetStart = headScan.targetStart {
            headScan.targetStart = targetStart - dropCount
        }
    }

    private mutating func fail(_ error: HTTPParseError) -> HTTPParserAction {
        state = .failed(error)
        return .error(error)
    }

    private mutating func completeRequest(_ head: RequestHead) -> HTTPParserAction {
        let request = HTTPRequest(
            method: head.method, target: head.target, version: head.version, headers: head.headers,
            body: body)
        body = []
        continueSent = false
        requestStart = cursor
        lineStart = cursor
        headScan = HeadScan()
        state = .head
        return .request(request)
    }

    /// What to say while the body is incomplete: `100 Continue` once if the client waits for it.
    private mutating func waitForBody(_ head: RequestHead) -> HTTPParserAction {
        if head.expectsContinue && !continueSent {
            continueSent = true
            return .sendContinue
        }
        return .needMoreData
    }

    /// The bytes of the line from `lineStart` to `lineFeed`, without the LF and an optional CR before it.
    private func lineContent(upTo lineFeed: Int) -> ArraySlice<UInt8> {
        var end = lineFeed
        if end > lineStart && buffer[end - 1] == ASCII.carriageReturn {
            end -= 1
        }
        return buffer[lineStart..<end]
    }

    /// Looks for the LF ending the line at `lineStart`, resuming where the last call stopped.
    /// `maxBytes` counts the whole line with its terminator.
    private mutating func scanLine(maxBytes: Int) -> LineScanResult {
        let lineLimit = lineStart + maxBytes
        let searchEnd = min(buffer.count, lineLimit)
        while cursor < searchEnd {
            if buffer[cursor] == ASCII.lineFeed {
                return .found(lineFeed: cursor)
            }
            cursor += 1
        }
        return cursor >= lineLimit ? .tooLong : .needMoreData
    }
}

// MARK: - Head

extension HTTPRequestParser {
    private mutating func readHead() -> HTTPParserAction {
        switch scanHead() {
        case .needMoreData:
            return .needMoreData
        case .failed(let error):
            return fail(error)
        case .complete(let headEnd):
            let head: RequestHead
            do throws(HTTPParseError) {
                head = try RequestHead(parsing: buffer[requestStart..<headEnd], limits: limits)
            } catch {
                return fail(error)
            }
            cursor = headEnd
            switch head.framing {
            case .length(let length):
                state = .fixedLengthBody(head, length: length)
                return readFixedLengthBody(head, length: length)
            case .chunked:
                lineStart = cursor
                state = .chunkedBody(head, .sizeLine)
                return readChunkedBody(head, phase: .sizeLine)
            }
        }
    }

    /// Finds the end of the head, failing as soon as the target or the head is over its limit.
    private mutating func scanHead() -> HeadScanResult {
        // RFC 9112 §2.2: a server ignores empty lines received before the request line.
        while !headScan.requestLineStarted {
            guard cursor < buffer.count else {
                requestStart = cursor
                return .needMoreData
            }
            if buffer[cursor] == ASCII.lineFeed {
                cursor += 1
                continue
            }
            if buffer[cursor] == ASCII.carriageReturn {
                guard cursor + 1 < buffer.count else {
                    requestStart = cursor
                    return .needMoreData
                }
                if buffer[cursor + 1] == ASCII.lineFeed {
                    cursor += 2
                    continue
                }
            }
            headScan.requestLineStarted = true
            requestStart = cursor
            lineStart = cursor
        }

        while cursor < buffer.count {
            let byte = buffer[cursor]
            if !headScan.requestLineEnded && headScan.targetStart == nil && byte != ASCII.space
                && byte != ASCII.carriageReturn && byte != ASCII.lineFeed
            {
                // The method is a token: refuse the first byte that cannot be in one instead of
                // waiting for a line end that binary input (a TLS ClientHello) may never send.
                if let error = ASCII.methodError(
                    byte: byte, length: cursor - requestStart + 1, first: cursor == requestStart)
                {
                    return .failed(error)
                }
            }
            if byte == ASCII.carriageReturn {
                // RFC 9112 §2.2: a bare CR is invalid; refused at once rather than left to time out.
                guard cursor + 1 < buffer.count else { return .needMoreData }
                if buffer[cursor + 1] != ASCII.lineFeed {
                    return .failed(.malformed("a CR is not followed by LF"))
                }
            }
            if !headScan.requestLineEnded {
                // Track the target (between the first and second SP) so an over-long one is
                // refused before its line ends (RFC 9112 §3: 414 for a target that is too long).
                if byte == ASCII.space {
                    if headScan.targetStart == nil {
                        headScan.targetStart = cursor + 1
                    } else {
                        headScan.targetEnded = true
                    }
                } else if let targetStart = headScan.targetStart, !headScan.targetEnded,
                    byte != ASCII.carriageReturn, byte != ASCII.lineFeed,
                    cursor - targetStart + 1 > limits.maxTargetBytes
                {
                    return .failed(.targetTooLong)
                }
            }
            if cursor - requestStart + 1 > limits.maxHeaderBytes {
                return .failed(.headersTooLarge)
            }
            if byte == ASCII.lineFeed {
                // RFC 9112 §2.1: the head ends with an empty line; §2.2 lets LF alone end a line.
                let lineIsEmpty =
                    cursor == lineStart
                    || (cursor == lineStart + 1 && buffer[lineStart] == ASCII.carriageReturn)
                if headScan.requestLineEnded && lineIsEmpty {
                    cursor += 1
                    return .complete(headEnd: cursor)
                }
                headScan.requestLineEnded = true
                lineStart = cursor + 1
            }
            cursor += 1
        }
        return .needMoreData
    }
}

// MARK: - Body

extension HTTPRequestParser {
    private mutating func readFixedLengthBody(_ head: RequestHead, length: Int) -> HTTPParserAction {
        guard buffer.count - cursor >= length else {
            return waitForBody(head)
        }
        body = Array(buffer[cursor..<cursor + length])
        cursor += length
        return completeRequest(head)
    }

    private mutating func readChunkedBody(_ head: RequestHead, phase startPhase: ChunkedBodyPhase)
        -> HTTPParserAction
    {
        var phase = startPhase
        while true {
            switch phase {
            case .sizeLine:
                switch scanLine(maxBytes: limits.maxHeaderBytes) {
                case .needMoreData:
                    state = .chunkedBody(head, phase)
                    return waitForBody(head)
                case .tooLong:
                    return fail(.malformed("a chunk-size line is longer than \(limits.maxHeaderBytes) bytes"))
                case .found(let lineFeed):
                    let size: Int
                    do throws(HTTPParseError) {
                        size = try Self.parseChunkSize(lineContent(upTo: lineFeed))
                    } catch {
                        return fail(error)
                    }
                    cursor = lineFeed + 1
                    lineStart = cursor
                    if size == 0 {
                        trailerBytes = 0
                        phase = .trailerSection
                    } else if size > limits.maxBodyBytes - body.count {
                        return fail(.bodyTooLarge)
                    } else {
                        phase = .data(remaining: size)
                    }
                }
            case .data(let remaining):
                let available = buffer.count - cursor
                guard available > 0 else {
                    state = .chunkedBody(head, phase)
                    return waitForBody(head)
                }
                let taken = min(remaining, available)
                body.append(contentsOf: buffer[cursor..<cursor + taken])
                cursor += taken
                phase = taken == remaining ? .dataEnd : .data(remaining: remaining - taken)
            case .dataEnd:
                guard cursor < buffer.count else {
                    state = .chunkedBody(head, phase)
                    return waitForBody(head)
                }
                if buffer[cursor] == ASCII.carriageReturn {
                    guard cursor + 1 < buffer.count else {
                        state = .chunkedBody(head, phase)
                        return waitForBody(head)
                    }
                    cursor += 1
                }
                guard buffer[cursor] == ASCII.lineFeed else {
                    return fail(.malformed("chunk data is not followed by CRLF where its size says it ends"))
                }
                cursor += 1
                lineStart = cursor
                phase = .sizeLine
            case .trailerSection:
                switch scanLine(maxBytes: limits.maxHeaderBytes - trailerBytes) {
                case .needMoreData:
                    state = .chunkedBody(head, phase)
                    return waitForBody(head)
                case .tooLong:
                    return fail(.headersTooLarge)
                case .found(let lineFeed):
                    let line = lineContent(upTo: lineFeed)
                    trailerBytes += lineFeed + 1 - lineStart
                    cursor = lineFeed + 1
                    lineStart = cursor
                    if line.isEmpty {
                        return completeRequest(head)
                    }
                    // RFC 9112 §7.1.2: trailer fields may be discarded, but they must still be
                    // well-formed field lines.
                    do throws(HTTPParseError) {
                        _ = try RequestHead.parseFieldLine(line)
                    } catch {
                        return fail(error)
                    }
                }
            }
        }
    }

    /// The size from a chunk-size line, ignoring chunk extensions (RFC 9112 §7.1.1).
    private static func parseChunkSize(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> Int {
        var size = 0
        var index = line.startIndex
        while index < line.endIndex, let digit = ASCII.hexValue(line[index]) {
            // Saturate instead of overflowing: any size this large is over the body limit anyway.
            size = size <= (Int.max - 15) / 16 ? size * 16 + digit : Int.max
            index += 1
        }
        guard index > line.startIndex else {
            throw .malformed("the chunk size '\(ASCII.printable(line))' is not hexadecimal")
        }
        while index < line.endIndex, ASCII.isWhitespace(line[index]) {
            index += 1
        }
        guard index == line.endIndex || line[index] == ASCII.semicolon else {
            throw .malformed("the chunk size '\(ASCII.printable(line))' is not hexadecimal")
        }
        guard !line[index...].contains(where: ASCII.isControlOtherThanTab) else {
            throw .malformed("a chunk extension contains a control character")
        }
        return size
    }
}

// MARK: - Parsed head

extension HTTPRequestParser {
    /// The request line and header fields of a request, checked, with how its body is framed.
    private struct RequestHead {
        var method: HTTPMethod
        var target: String
        var version: HTTPVersion
        var headers: HTTPHeaders
        var framing: BodyFraming
        /// Whether the client waits for `100 Continue` before sending the body (RFC 9110 §10.1.1).
        var expectsContinue: Bool

        /// Parses `bytes`: a request line, field lines and the empty line ending them.
        init(parsing bytes: ArraySlice<UInt8>, limits: HTTPParserLimits) throws(HTTPParseError) {
            var lines: [ArraySlice<UInt8>] = []
            lines.reserveCapacity(16)
            var lineStart = bytes.startIndex
            for index in bytes.indices where bytes[index] == ASCII.lineFeed {
                var end = index
                if end > lineStart && bytes[end - 1] == ASCII.carriageReturn {
                    end -= 1
                }
                lines.append(bytes[lineStart..<end])
                lineStart = index + 1
            }
            // The last line is the empty one ending the head.
            lines.removeLast()

            let authority: String?
            (method, target, version, authority) = try Self.parseRequestLine(lines[0], limits: limits)
            headers = HTTPHeaders()
            headers.reserveCapacity(lines.count - 1)
            for line in lines.dropFirst() {
                let field = try Self.parseFieldLine(line)
                headers.add(name: field.name, value: field.value)
            }
            try Self.checkHost(headers, version: version)
            // RFC 9112 §3.2.2: with an absolute-form target the server ignores `Host` and uses
            // the target's authority, so whatever checks the host checks the one that counts.
            if let authority { headers.replaceOrAdd(name: "Host", value: authority) }
            framing = try Self.bodyFraming(headers, version: version)
            if case .length(let length) = framing, length > limits.maxBodyBytes {
                throw .bodyTooLarge
            }
            let expectations = try Self.expectations(headers)
            // RFC 9110 §10.1.1: a server ignores a 100-continue expectation in an HTTP/1.0 request.
            expectsContinue = expectations && version != .http10
        }

        /// Method, target (in origin-form), version, and the authority of an absolute-form target,
        /// from `method SP target SP version` (RFC 9112 §3).
        private static func parseRequestLine(_ line: ArraySlice<UInt8>, limits: HTTPParserLimits)
            throws(HTTPParseError) -> (HTTPMethod, String, HTTPVersion, String?)
        {
            guard let firstSpace = line.firstIndex(of: ASCII.space),
                let secondSpace = line[(firstSpace + 1)...].firstIndex(of: ASCII.space)
            else {
                throw .malformed("the request line is not 'method SP target SP version'")
            }
            let methodBytes = line[..<firstSpace]
            let targetBytes = line[(firstSpace + 1)..<secondSpace]
            let versionBytes = line[(secondSpace + 1)...]
            guard !versionBytes.contains(ASCII.space) else {
                throw .malformed("the request line has more than two spaces")
            }
            // The version comes first so that an HTTP/2 preface (`PRI * HTTP/2.0`) is answered with 505.
            let version = try parseVersion(versionBytes)
            guard !methodBytes.isEmpty, methodBytes.allSatisfy(ASCII.isTokenCharacter) else {
                throw .malformed("the method '\(ASCII.printable(methodBytes))' is not a token")
            }
            let method = HTTPMethod(rawValue: String(decoding: methodBytes, as: UTF8.self))
            let (target, authority) = try parseTarget(targetBytes, method: method, limits: limits)
            return (method, target, version, authority)
        }

        /// `HTTP/1.0` or `HTTP/1.1`; a later HTTP/1.x is answered as 1.1 (RFC 9110 §6.2).
        private static func parseVersion(_ bytes: ArraySlice<UInt8>) throws(HTTPParseError) -> HTTPVersion {
            // RFC 9112 §2.3: HTTP-version = "HTTP" "/" DIGIT "." DIGIT, case-sensitive.
            let versionBytes = Array(bytes)
            guard versionBytes.count == 8, versionBytes[..<5].elementsEqual("HTTP/".utf8),
                ASCII.isDigit(versionBytes[5]), versionBytes[6] == UInt8(ascii: "."),
                ASCII.isDigit(versionBytes[7])
            else {
                throw .malformed("'\(ASCII.printable(bytes))' is not an HTTP version")
            }
            guard versionBytes[5] == UInt8(ascii: "1") else {
                throw .unsupportedVersion(String(decoding: versionBytes, as: UTF8.self))
            }
            return versionBytes[7] == UInt8(ascii: "0") ? .http10 : .http11
        }

        /// The target in origin-form, from origin-form, absolute-form or `*` for OPTIONS (RFC 9112 §3.2).
        private static func parseTarget(
            _ bytes: ArraySlice<UInt8>, method: HTTPMethod, limits: HTTPParserLimits
        )
            throws(HTTPParseError) -> (target: String, authority: String?)
        {
            guard !bytes.isEmpty else {
                throw .malformed("the request target is empty")
            }
            guard bytes.count <= limits.maxTargetBytes else {
                throw .targetTooLong
            }
            // RFC 3986 §2: a URI is visible ASCII; a fragment (`#`) is never sent in a request target.
            guard bytes.allSatisfy({ $0 >= 0x21 && $0 <= 0x7E && $0 != UInt8(ascii: "#") }) else {
                throw .malformed(
                    "the request target contains a control character, space, '#' or non-ASCII byte")
            }
            if bytes.first == ASCII.slash {
                return (String(decoding: bytes, as: UTF8.self), nil)
            }
            if bytes.elementsEqual("*".utf8) {
                // RFC 9112 §3.2.4: asterisk-form is only used for a server-wide OPTIONS.
                guard method == .options else {
                    throw .malformed("the target '*' is only valid for OPTIONS")
                }
                return ("*", nil)
            }
            for scheme in ["http://", "https://"] where ASCII.hasPrefixIgnoringCase(bytes, scheme) {
                // RFC 9112 §3.2.2: absolute-form; the handlers see the same path as in origin-form.
                let authorityStart = bytes.startIndex + scheme.utf8.count
                let authorityEnd =
                    bytes[authorityStart...].firstIndex { $0 == ASCII.slash || $0 == ASCII.questionMark }
                    ?? bytes.endIndex
                let authority = bytes[authorityStart..<authorityEnd]
                // RFC 9110 §4.2.4: userinfo in an http URI is an error.
                guard !authority.isEmpty, authority.allSatisfy(ASCII.isHostCharacter) else {
                    throw .malformed("the absolute-form target has no valid authority")
                }
                let pathAndQuery = String(decoding: bytes[authorityEnd...], as: UTF8.self)
                return (
                    pathAndQuery.first == "/" ? pathAndQuery : "/" + pathAndQuery,
                    String(decoding: authority, as: UTF8.self)
                )
            }
            throw .malformed("the request target must start with '/' or be an absolute http URI")
        }

        /// Name and value of `name: value`, the value trimmed of SP and HTAB (RFC 9112 §5).
        static func parseFieldLine(_ line: ArraySlice<UInt8>) throws(HTTPParseError) -> (
            name: String, value: String
        ) {
            // RFC 9112 §5.2: obs-fold outside message/http is rejected with 400.
            guard let first = line.first, !ASCII.isWhitespace(first) else {
                throw .malformed("a field line starts with whitespace (obsolete line folding)")
            }
            guard let colon = line.firstIndex(of: ASCII.colon) else {
                throw .malformed("the field line '\(ASCII.printable(line))' has no colon")
            }
            let nameBytes = line[..<colon]
            guard !nameBytes.isEmpty else {
                throw .malformed("a field line has an empty name")
            }
            // RFC 9112 §5.1: whitespace between name and colon must be rejected with 400.
            guard let lastNameByte = nameBytes.last, !ASCII.isWhitespace(lastNameByte) else {
                throw .malformed("the field '\(ASCII.printable(nameBytes))' has whitespace before its colon")
            }
            guard nameBytes.allSatisfy(ASCII.isTokenCharacter) else {
                throw .malformed("'\(ASCII.printable(nameBytes))' is not a valid field name")
            }
            var valueBytes = line[(colon + 1)...]
            while let byte = valueBytes.first, ASCII.isWhitespace(byte) {
                valueBytes.removeFirst()
            }
            while let byte = valueBytes.last, ASCII.isWhitespace(byte) {
                valueBytes.removeLast()
            }
            let name = String(decoding: nameBytes, as: UTF8.self)
            // RFC 9110 §5.5: CR, LF and NUL are never valid in a value; other controls are not field-vchar.
            guard !valueBytes.contains(where: ASCII.isControlOtherThanTab) else {
                throw .malformed("the field '\(name)' contains a control character")
            }
            // Bytes outside ASCII (obs-text) are read as UTF-8, invalid sequences repaired.
            return (name, String(decoding: valueBytes, as: UTF8.self))
        }

        /// RFC 9112 §3.2: exactly one valid Host in HTTP/1.1, at most one in HTTP/1.0.
        private static func checkHost(_ headers: HTTPHeaders, version: HTTPVersion) throws(HTTPParseError) {
            let hosts = headers.values("Host")
            guard hosts.count <= 1 else {
                throw .malformed("the request has more than one Host field")
            }
            guard let host = hosts.first else {
                if version == .http10 { return }
                throw .malformed("an HTTP/1.1 request must have a Host field")
            }
            guard host.utf8.allSatisfy(ASCII.isHostCharacter) else {
                throw .malformed("the Host field is not a valid host[:port]")
            }
        }

        /// How the body is delimited (RFC 9112 §6.3), refusing framings that could be read two ways.
        private static func bodyFraming(_ headers: HTTPHeaders, version: HTTPVersion) throws(HTTPParseError)
            -> BodyFraming
        {
            let transferEncodings = headers.values("Transfer-Encoding")
            let contentLengths = headers.values("Content-Length")
            guard !transferEncodings.isEmpty else {
                return .length(try contentLength(contentLengths) ?? 0)
            }
            // RFC 9112 §6.3 ¶3: both fields together are a request smuggling attempt; refuse and close.
            guard contentLengths.isEmpty else {
                throw .malformed("the request has both Transfer-Encoding and Content-Length")
            }
            // RFC 9112 §6.1: Transfer-Encoding in an HTTP/1.0 message means faulty framing.
            guard version != .http10 else {
                throw .malformed("an HTTP/1.0 request cannot use Transfer-Encoding")
            }
            let codings = listElements(transferEncodings)
            guard !codings.isEmpty else {
                throw .malformed("the Transfer-Encoding field is empty")
            }
            if let unsupported = codings.first(where: { !$0.caseInsensitiveEquals("chunked") }) {
                throw .unsupportedTransferCoding(String(unsupported))
            }
            // RFC 9112 §6.1: a sender must not apply chunked more than once.
            guard codings.count == 1 else {
                throw .malformed("the chunked transfer coding is applied more than once")
            }
            return .chunked
        }

        /// The Content-Length, if any; several values must agree (RFC 9110 §8.6).
        private static func contentLength(_ values: [String]) throws(HTTPParseError) -> Int? {
            var length: Int?
            for value in values {
                for element in value.splitASCII(UInt8(ascii: ","), omittingEmptySubsequences: false) {
                    let digits = element.trimmingSpaces().utf8
                    guard !digits.isEmpty, digits.allSatisfy(ASCII.isDigit) else {
                        throw .malformed("the Content-Length '\(value)' is not a decimal number")
                    }
                    var parsed = 0
                    for digit in digits {
                        let (product, productOverflow) = parsed.multipliedReportingOverflow(by: 10)
                        let (sum, sumOverflow) = product.addingReportingOverflow(
                            Int(digit - UInt8(ascii: "0")))
                        // Saturate: such a length is over any body limit.
                        parsed = productOverflow || sumOverflow ? Int.max : sum
                    }
                    if let length, length != parsed {
                        throw .malformed("the request has different Content-Length values")
                    }
                    length = parsed
                }
            }
            return length
        }

        /// Whether the request expects `100-continue`; any other expectation is refused (RFC 9110 §10.1.1).
        private static func expectations(_ headers: HTTPHeaders) throws(HTTPParseError) -> Bool {
            let expectations = listElements(headers.values("Expect"))
            if let unsupported = expectations.first(where: { !$0.caseInsensitiveEquals("100-continue") }) {
                throw .unsupportedExpectation(String(unsupported))
            }
            return !expectations.isEmpty
        }

        /// The non-empty elements of comma-separated list fields (RFC 9110 §5.6.1).
        private static func listElements(_ values: [String]) -> [Substring] {
            values.flatMap { $0.splitASCII(UInt8(ascii: ",")) }.map { $0.trimmingSpaces() }.filter {
                !$0.isEmpty
            }
        }
    }
}

// MARK: - Bytes

/// Byte values and classes from RFC 5234 Appendix B.1 and RFC 9110 §5.6.2.
private enum ASCII {
    static let horizontalTab: UInt8 = 0x09
    static let lineFeed: UInt8 = 0x0A
    static let carriageReturn: UInt8 = 0x0D
    static let space: UInt8 = 0x20
    static let slash = UInt8(ascii: "/")
    static let colon = UInt8(ascii: ":")
    static let semicolon = UInt8(ascii: ";")
    static let questionMark = UInt8(ascii: "?")

    /// Why a method with `byte` at `length` bytes is refused, or nil if it may go on.
    static func methodError(byte: UInt8, length: Int, first: Bool) -> HTTPParseError? {
        // 0x16 0x03 starts every TLS record of a handshake (RFC 8446 §5.1).
        if first && byte == 0x16 {
            return .malformed("this port speaks plain HTTP, not TLS: use http://, not https://")
        }
        if !ASCII.isTokenCharacter(byte) {
            return .malformed("the method contains a byte that cannot be in a method")
        }
        // The longest registered method is 17 bytes (UPDATEREDIRECTREF); a long one is not a method.
        if length > maxMethodBytes {
            return .malformed("the method is longer than \(maxMethodBytes) bytes")
        }
        return nil
    }

    /// The longest method the parser reads before refusing the request.
    static let maxMethodBytes = 32

    /// tchar (RFC 9110 §5.6.2): the characters of methods and field names.
    static func isTokenCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
            UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
            UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default:
            return false
        }
    }

    /// uri-host and port characters (RFC 3986 §3.2.2): unreserved, pct-encoded, sub-delims, `:`, `[`, `]`.
    static func isHostCharacter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"):
            return true
        case UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "%"),
            UInt8(ascii: "!"), UInt8(ascii: "$"), UInt8(ascii: "&"), UInt8(ascii: "'"), UInt8(ascii: "("),
            UInt8(ascii: ")"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: ","), UInt8(ascii: ";"),
            UInt8(ascii: "="), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
            return true
        default:
            return false
        }
    }

    /// DIGIT (RFC 5234).
    static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    /// SP or HTAB, the whitespace allowed around field values (RFC 9110 §5.6.3).
    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == space || byte == horizontalTab
    }

    /// CTL other than HTAB: never valid in a field value or chunk extension (RFC 9110 §5.5).
    static func isControlOtherThanTab(_ byte: UInt8) -> Bool {
        (byte < 0x20 && byte != horizontalTab) || byte == 0x7F
    }

    /// The value of HEXDIG (RFC 5234), either case.
    static func hexValue(_ byte: UInt8) -> Int? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return Int(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return Int(byte - UInt8(ascii: "a")) + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return Int(byte - UInt8(ascii: "A")) + 10
        default: return nil
        }
    }

    /// Whether `bytes` starts with `lowercasePrefix`, ignoring ASCII case (URI schemes, RFC 3986 §3.1).
    static func hasPrefixIgnoringCase(_ bytes: ArraySlice<UInt8>, _ lowercasePrefix: String) -> Bool {
        bytes.count >= lowercasePrefix.utf8.count
            && zip(bytes, lowercasePrefix.utf8).allSatisfy { byte, expected in
                let lowered = byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z") ? byte + 0x20 : byte
                return lowered == expected
            }
    }

    /// Client bytes for an error message, shortened so a detail stays one readable sentence.
    static func printable(_ bytes: ArraySlice<UInt8>) -> String {
        let shown = String(decoding: bytes.prefix(64), as: UTF8.self)
        return bytes.count > 64 ? shown + "..." : shown
    }
}
