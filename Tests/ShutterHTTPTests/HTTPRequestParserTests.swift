import ShutterHTTP
import Testing

// MARK: - Helpers

/// A request as the tests compare it (`HTTPRequest` is not Equatable).
private struct ParsedRequest: Equatable, Sendable {
    var method: String
    var target: String
    var version: HTTPVersion
    /// Header fields as `name: value`, in the order received.
    var headers: [String]
    var body: [UInt8]

    init(_ request: HTTPRequest) {
        method = request.method.rawValue
        target = request.target
        version = request.version
        headers = request.headers.map { "\($0.name): \($0.value)" }
        body = request.body
    }

    init(
        _ method: String, _ target: String, version: HTTPVersion = .http11, headers: [String],
        body: String = ""
    ) {
        self.method = method
        self.target = target
        self.version = version
        self.headers = headers
        self.body = Array(body.utf8)
    }
}

/// One result of `next()`, comparable.
private enum Step: Equatable, Sendable {
    case needMoreData
    case sendContinue
    case request(ParsedRequest)
    case error(HTTPParseError)

    init(_ action: HTTPParserAction) {
        switch action {
        case .needMoreData: self = .needMoreData
        case .sendContinue: self = .sendContinue
        case .request(let request): self = .request(ParsedRequest(request))
        case .error(let error): self = .error(error)
        }
    }
}

extension HTTPRequestParser {
    fileprivate mutating func nextStep() -> Step {
        Step(next())
    }

    fileprivate mutating func append(_ text: String) {
        append(Array(text.utf8))
    }

    /// The request `next()` returns, or nil (recording an issue) if it returns anything else.
    fileprivate mutating func nextRequest(sourceLocation: SourceLocation = #_sourceLocation) -> HTTPRequest? {
        let action = next()
        guard case .request(let request) = action else {
            Issue.record("expected a request, got \(action)", sourceLocation: sourceLocation)
            return nil
        }
        return request
    }
}

/// Appends each piece in turn and calls `next()` after each until it needs more data;
/// returns every other step, stopping at the first error.
private func feed(_ pieces: [[UInt8]], limits: HTTPParserLimits = HTTPParserLimits())
    -> (steps: [Step], parser: HTTPRequestParser)
{
    var parser = HTTPRequestParser(limits: limits)
    var steps: [Step] = []
    for piece in pieces {
        parser.append(piece)
        // A bound, so that a parser stuck returning the same step fails instead of hanging.
        for _ in 0..<1000 {
            let step = parser.nextStep()
            if step == .needMoreData { break }
            steps.append(step)
            if case .error = step { return (steps, parser) }
        }
    }
    return (steps, parser)
}

/// The steps from feeding `text` in one piece.
private func feed(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> [Step] {
    feed([Array(text.utf8)], limits: limits).steps
}

/// The first step other than `needMoreData` for `text` fed whole, or `needMoreData` if there is none.
private func firstStep(_ text: String, limits: HTTPParserLimits = HTTPParserLimits()) -> Step {
    feed(text, limits: limits).first ?? .needMoreData
}

// MARK: - Sample streams fed in every split

/// A byte stream with the requests it must produce however it is split.
private struct SampleStream: Sendable, CustomTestStringConvertible {
    var name: String
    var bytes: [UInt8]
    var requests: [ParsedRequest]
    /// Split offsets at which the first piece ends after an `Expect: 100-continue` head and before
    /// its body is complete, so `sendContinue` must come first.
    var continueWindow: Range<Int>?

    var testDescription: String { name }

    init(_ name: String, _ text: String, _ requests: [ParsedRequest], continueWindow: Range<Int>? = nil) {
        self.name = name
        self.bytes = Array(text.utf8)
        self.requests = requests
        self.continueWindow = continueWindow
    }

    func expectedSteps(splitAt offset: Int) -> [Step] {
        let sendsContinue = continueWindow?.contains(offset) ?? false
        return (sendsContinue ? [.sendContinue] : []) + requests.map(Step.request)
    }

    var expectedStepsByteByByte: [Step] {
        (continueWindow == nil ? [] : [.sendContinue]) + requests.map(Step.request)
    }
}

private let expectHead =
    "POST /upload HTTP/1.1\r\nHost: camera.local\r\nExpect: 100-continue\r\nContent-Length: 10\r\n\r\n"
private let expectChunkedHead =
    "PUT /upload HTTP/1.1\r\nHost: camera.local\r\nTransfer-Encoding: chunked\r\nExpect: 100-Continue\r\n\r\n"
private let expectChunkedBody = "4\r\nabcd\r\n0\r\n\r\n"

private let sampleStreams: [SampleStream] = [
    SampleStream(
        "simple GET",
        "GET /library?limit=5 HTTP/1.1\r\nHost: camera.local\r\nAccept: */*\r\n\r\n",
        [ParsedRequest("GET", "/library?limit=5", headers: ["Host: camera.local", "Accept: */*"])]),
    SampleStream(
        "POST with Content-Length",
        "POST /snap HTTP/1.1\r\nHost: camera.local\r\nContent-Type: application/json\r\n"
            + "Content-Length: 13\r\n\r\n{\"delay\": 2}\n",
        [
            ParsedRequest(
                "POST", "/snap",
                headers: ["Host: camera.local", "Content-Type: application/json", "Content-Length: 13"],
                body: "{\"delay\": 2}\n")
        ]),
    SampleStream(
        "chunked with extensions and trailers",
        "PUT /upload HTTP/1.1\r\nHost: camera.local\r\nTransfer-Encoding: chunked\r\n\r\n"
            + "5;name=value\r\nhello\r\n7 ; a=\"b;c\"\r\n, world\r\nA\r\n0123456789\r\n"
            + "0;last\r\nChecksum: abc\r\nX-Trailer: 1\r\n\r\n",
        [
            ParsedRequest(
                "PUT", "/upload", headers: ["Host: camera.local", "Transfer-Encoding: chunked"],
                body: "hello, world0123456789")
        ]),
    SampleStream(
        "three pipelined requests",
        "GET /a HTTP/1.1\r\nHost: h\r\n\r\n"
            + "POST /b HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n\r\nxyz"
            + "\r\nGET /c HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        [
            ParsedRequest("GET", "/a", headers: ["Host: h"]),
            ParsedRequest("POST", "/b", headers: ["Host: h", "Content-Length: 3"], body: "xyz"),
            ParsedRequest("GET", "/c", headers: ["Host: h", "Connection: close"]),
        ]),
    SampleStream(
        "Expect: 100-continue with Content-Length, then a pipelined GET",
        expectHead + "0123456789" + "GET /status HTTP/1.1\r\nHost: camera.local\r\n\r\n",
        [
            ParsedRequest(
                "POST", "/upload",
                headers: ["Host: camera.local", "Expect: 100-continue", "Content-Length: 10"],
                body: "0123456789"),
            ParsedRequest("GET", "/status", headers: ["Host: camera.local"]),
        ],
        continueWindow: expectHead.utf8.count..<expectHead.utf8.count + 10),
    SampleStream(
        "Expect: 100-continue with a chunked body",
        expectChunkedHead + expectChunkedBody,
        [
            ParsedRequest(
                "PUT", "/upload",
                headers: ["Host: camera.local", "Transfer-Encoding: chunked", "Expect: 100-Continue"],
                body: "abcd")
        ],
        continueWindow: expectChunkedHead.utf8.count..<(expectChunkedHead + expectChunkedBody).utf8.count),
    SampleStream(
        "bare LF line ends and leading empty lines",
        "\r\n\nGET /lf HTTP/1.0\nHost: h\nContent-Length: 2\n\nok\n\r\nHEAD / HTTP/1.1\r\nHost: h\n\r\n",
        [
            ParsedRequest(
                "GET", "/lf", version: .http10, headers: ["Host: h", "Content-Length: 2"], body: "ok"),
            ParsedRequest("HEAD", "/", headers: ["Host: h"]),
        ]),
]

@Test(arguments: sampleStreams)
private func wholeStreamGivesTheExpectedRequests(_ stream: SampleStream) {
    let (steps, parser) = feed([stream.bytes])
    #expect(steps == stream.requests.map(Step.request))
    #expect(parser.bufferedByteCount == 0)
}

@Test(arguments: sampleStreams)
private func streamSplitInTwoAtEveryOffsetGivesTheSameRequests(_ stream: SampleStream) {
    for offset in 0...stream.bytes.count {
        let pieces = [Array(stream.bytes[..<offset]), Array(stream.bytes[offset...])]
        let (steps, parser) = feed(pieces)
        #expect(steps == stream.expectedSteps(splitAt: offset), "split at \(offset)")
        #expect(parser.bufferedByteCount == 0, "split at \(offset)")
    }
}

@Test(arguments: sampleStreams)
private func streamFedOneByteAtATimeGivesTheSameRequests(_ stream: SampleStream) {
    let (steps, parser) = feed(stream.bytes.map { [$0] })
    #expect(steps == stream.expectedStepsByteByByte)
    #expect(parser.bufferedByteCount == 0)
}

// MARK: - Request line and target

@Test private func requestFieldsAreParsed() throws {
    var parser = HTTPRequestParser()
    parser.append("DELETE /pictures/42?force=1 HTTP/1.1\r\nHost: camera.local:8080\r\nX-Empty:\r\n\r\n")
    let parsed = parser.nextRequest()
    let request = try #require(parsed)
    #expect(request.method == .delete)
    #expect(request.target == "/pictures/42?force=1")
    #expect(request.path == "/pictures/42")
    #expect(request.queryValue("force") == "1")
    #expect(request.version == .http11)
    #expect(request.headers["host"] == "camera.local:8080")
    #expect(request.headers["X-Empty"] == "")
    #expect(request.body.isEmpty)
    #expect(parser.nextStep() == .needMoreData)
    #expect(parser.bufferedByteCount == 0)
}

@Test(arguments: [
    ("HTTP/1.0", HTTPVersion.http10),
    ("HTTP/1.1", HTTPVersion.http11),
    ("HTTP/1.9", HTTPVersion.http11),
])
private func acceptedVersions(_ versionText: String, _ version: HTTPVersion) {
    let steps = feed("GET / \(versionText)\r\nHost: h\r\n\r\n")
    #expect(steps == [.request(ParsedRequest("GET", "/", version: version, headers: ["Host: h"]))])
}

@Test private func unknownMethodTokenIsKept() {
    let steps = feed("PROPFIND / HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(steps == [.request(ParsedRequest("PROPFIND", "/", headers: ["Host: h"]))])
}

@Test(arguments: [
    ("http://camera.local/library?limit=5", "/library?limit=5", "camera.local"),
    ("HTTP://camera.local:8080/a", "/a", "camera.local:8080"),
    ("https://camera.local/b", "/b", "camera.local"),
    ("http://camera.local", "/", "camera.local"),
    ("http://camera.local?x=1", "/?x=1", "camera.local"),
    // RFC 9112 §3.2.2: the target's authority, not the Host field, names the host.
    ("http://evil.example/c", "/c", "evil.example"),
])
private func absoluteFormBecomesOriginFormAndItsAuthorityTheHost(
    _ sent: String, _ target: String, _ host: String
) {
    let steps = feed("GET \(sent) HTTP/1.1\r\nHost: camera.local\r\n\r\n")
    #expect(steps == [.request(ParsedRequest("GET", target, headers: ["Host: \(host)"]))])
}

@Test private func asteriskFormIsAcceptedForOptions() {
    let steps = feed("OPTIONS * HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(steps == [.request(ParsedRequest("OPTIONS", "*", headers: ["Host: h"]))])
}

// MARK: - Header fields

@Test private func fieldValuesAreTrimmedAndOrderAndCaseKept() {
    let steps = feed("GET / HTTP/1.1\r\nhost: h\r\nX-A: \t one two \t\r\nX-A:two\r\nX-B: caf\u{E9}\r\n\r\n")
    #expect(
        steps == [
            .request(
                ParsedRequest("GET", "/", headers: ["host: h", "X-A: one two", "X-A: two", "X-B: caf\u{E9}"]))
        ])
}

@Test private func http10RequestNeedsNoHost() {
    let steps = feed("GET / HTTP/1.0\r\n\r\n")
    #expect(steps == [.request(ParsedRequest("GET", "/", version: .http10, headers: []))])
}

// MARK: - Bodies

@Test private func contentLengthListOfEqualValuesIsAccepted() {
    let steps = feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\nContent-Length: 3\r\n\r\nabc")
    #expect(
        steps == [
            .request(
                ParsedRequest(
                    "POST", "/", headers: ["Host: h", "Content-Length: 3, 3", "Content-Length: 3"],
                    body: "abc"))
        ])
}

@Test private func zeroContentLengthAndChunkedCaseAreAccepted() {
    let steps = feed(
        "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 0\r\n\r\n"
            + "POST /b HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n")
    #expect(
        steps == [
            .request(ParsedRequest("POST", "/a", headers: ["Host: h", "Content-Length: 0"])),
            .request(ParsedRequest("POST", "/b", headers: ["Host: h", "Transfer-Encoding: Chunked"])),
        ])
}

@Test private func chunkedBodyWithBareLineFeedsAndUppercaseHex() {
    let body = String(repeating: "z", count: 26)
    let steps = feed(
        "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n1A\n\(body)\n0\n\n")
    #expect(
        steps == [
            .request(
                ParsedRequest("POST", "/", headers: ["Host: h", "Transfer-Encoding: chunked"], body: body))
        ]
    )
}

@Test private func bodyBytesAreKeptExactly() throws {
    let body: [UInt8] = Array(0...255)
    var parser = HTTPRequestParser()
    parser.append("PUT /raw HTTP/1.1\r\nHost: h\r\nContent-Length: 256\r\n\r\n")
    parser.append(body)
    let parsed = parser.nextRequest()
    let request = try #require(parsed)
    #expect(request.body == body)
}

// MARK: - Pipelining, keep-alive and buffered bytes

@Test private func pipelinedRequestsComeOutOneByOneWithKeepAlive() throws {
    var parser = HTTPRequestParser()
    let first = "GET /1 HTTP/1.1\r\nHost: h\r\n\r\n"
    let second = "GET /2 HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
    let third = "GET /3 HTTP/1.0\r\n\r\n"
    let fourth = "GET /4 HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n"
    parser.append(first + second + third + fourth + "GET /5")

    let expectations: [(String, Bool, Int)] = [
        ("/1", true, second.utf8.count + third.utf8.count + fourth.utf8.count + 6),
        ("/2", true, third.utf8.count + fourth.utf8.count + 6),
        ("/3", false, fourth.utf8.count + 6),
        ("/4", false, 6),
    ]
    for (target, keepAlive, remaining) in expectations {
        let parsed = parser.nextRequest()
        let request = try #require(parsed)
        #expect(request.target == target)
        #expect(request.keepAlive == keepAlive, "\(target)")
        #expect(parser.bufferedByteCount == remaining, "\(target)")
    }
    #expect(parser.nextStep() == .needMoreData)
    #expect(parser.bufferedByteCount == 6)
    parser.append(" HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(parser.nextRequest()?.target == "/5")
    #expect(parser.bufferedByteCount == 0)
}

@Test private func bufferedByteCountCountsThePartialRequest() {
    var parser = HTTPRequestParser()
    #expect(parser.bufferedByteCount == 0)
    parser.append("GET / HTTP/1.1\r\nHo")
    #expect(parser.bufferedByteCount == 18)
    #expect(parser.nextStep() == .needMoreData)
    #expect(parser.bufferedByteCount == 18)
    parser.append("st: h\r\n\r\nPOST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab")
    #expect(parser.nextStep() != .needMoreData)
    let partial = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nab"
    #expect(parser.nextStep() == .needMoreData)
    #expect(parser.bufferedByteCount == partial.utf8.count)
}

@Test private func emptyLinesBeforeARequestAreNotBuffered() {
    var parser = HTTPRequestParser()
    parser.append("\r\n\n\r\n")
    #expect(parser.nextStep() == .needMoreData)
    #expect(parser.bufferedByteCount == 0)
    parser.append("\r")
    #expect(parser.nextStep() == .needMoreData)
    parser.append("\nGET / HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(parser.nextStep() == .request(ParsedRequest("GET", "/", headers: ["Host: h"])))
}

@Test private func bufferedByteCountKeepsDecodedChunksOfAnIncompleteBody() {
    // Many small chunks, fed in pieces, so compaction drops decoded bytes mid-body.
    let head = "POST /big HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    let chunk = "40\r\n" + String(repeating: "q", count: 64) + "\r\n"
    let stream = Array((head + String(repeating: chunk, count: 500) + "0\r\n\r\n").utf8)
    var parser = HTTPRequestParser()
    var appended = 0
    var offset = 0
    while offset < stream.count - 1000 {
        let end = min(offset + 1000, stream.count - 1000)
        parser.append(Array(stream[offset..<end]))
        appended += end - offset
        offset = end
        #expect(parser.nextStep() == .needMoreData)
        #expect(parser.bufferedByteCount == appended)
    }
    parser.append(Array(stream[offset...]))
    guard case .request(let request) = parser.nextStep() else {
        Issue.record("the chunked request did not complete")
        return
    }
    #expect(request.body == Array(repeating: UInt8(ascii: "q"), count: 64 * 500))
    #expect(parser.bufferedByteCount == 0)
}

@Test(arguments: [1, 7, 1000, 1 << 20])
private func manyPipelinedRequestsSurviveAnyPieceSize(_ pieceSize: Int) {
    // Sixty-four requests with bodies of growing size cross the compaction threshold many times.
    var text = ""
    var expected: [Step] = []
    for index in 0..<64 {
        let body = String(repeating: Character(Unicode.Scalar(UInt8(65 + index % 26))), count: index * 37)
        if index.isMultiple(of: 2) {
            text += "POST /\(index) HTTP/1.1\r\nHost: h\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            expected.append(
                .request(
                    ParsedRequest(
                        "POST", "/\(index)", headers: ["Host: h", "Content-Length: \(body.utf8.count)"],
                        body: body)))
        } else {
            let size = String(body.utf8.count, radix: 16)
            let chunks = body.isEmpty ? "0\r\n\r\n" : "\(size)\r\n\(body)\r\n0\r\n\r\n"
            text += "POST /\(index) HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n\(chunks)"
            expected.append(
                .request(
                    ParsedRequest(
                        "POST", "/\(index)", headers: ["Host: h", "Transfer-Encoding: chunked"], body: body)))
        }
    }
    let bytes = Array(text.utf8)
    let pieces = stride(from: 0, to: bytes.count, by: pieceSize).map {
        Array(bytes[$0..<min($0 + pieceSize, bytes.count)])
    }
    let (steps, parser) = feed(pieces)
    #expect(steps == expected)
    #expect(parser.bufferedByteCount == 0)
}

// MARK: - Expect: 100-continue

@Test private func sendContinueComesOnceBeforeTheBody() {
    var parser = HTTPRequestParser()
    parser.append(expectHead)
    #expect(parser.nextStep() == .sendContinue)
    #expect(parser.nextStep() == .needMoreData)
    parser.append("0123")
    #expect(parser.nextStep() == .needMoreData)
    parser.append("456789")
    guard case .request(let request) = parser.nextStep() else {
        Issue.record("the body did not complete the request")
        return
    }
    #expect(request.body == Array("0123456789".utf8))
    #expect(parser.nextStep() == .needMoreData)
}

@Test private func sendContinueIsResetForTheNextRequest() {
    let steps = feed([
        Array(expectHead.utf8), Array(("0123456789" + expectHead).utf8), Array("abcdefghij".utf8),
    ])
    .steps
    let request = ParsedRequest(
        "POST", "/upload", headers: ["Host: camera.local", "Expect: 100-continue", "Content-Length: 10"],
        body: "0123456789")
    var second = request
    second.body = Array("abcdefghij".utf8)
    #expect(steps == [.sendContinue, .request(request), .sendContinue, .request(second)])
}

@Test(arguments: [
    "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 0\r\n\r\n",
    "GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n",
    "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
    "POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n",
])
private func noContinueWhenTheBodyIsEmptyOrAlreadyHere(_ text: String) {
    let steps = feed(text)
    #expect(steps.count == 1)
    guard case .request = steps.first else {
        Issue.record("expected one request, got \(steps)")
        return
    }
}

@Test private func http10IgnoresTheContinueExpectation() {
    var parser = HTTPRequestParser()
    parser.append("POST / HTTP/1.0\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n")
    #expect(parser.nextStep() == .needMoreData)
    parser.append("ok")
    #expect(
        parser.nextStep()
            == .request(
                ParsedRequest(
                    "POST", "/", version: .http10, headers: ["Expect: 100-continue", "Content-Length: 2"],
                    body: "ok")))
}

@Test private func tooLargeContentLengthWithExpectIsRefusedWithoutContinue() {
    var parser = HTTPRequestParser(limits: HTTPParserLimits(maxBodyBytes: 10))
    parser.append("POST / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\nContent-Length: 11\r\n\r\n")
    #expect(parser.nextStep() == .error(.bodyTooLarge))
}

// MARK: - Errors

/// What a bad request must produce: an exact error, or `.malformed` whose reason mentions a phrase.
private enum ExpectedError: Sendable {
    case exactly(HTTPParseError)
    case malformed(mentioning: String)
}

private struct ErrorCase: Sendable, CustomTestStringConvertible {
    var name: String
    var text: String
    var expected: ExpectedError

    var testDescription: String { name }

    init(_ name: String, _ text: String, _ expected: ExpectedError) {
        self.name = name
        self.text = text
        self.expected = expected
    }

    /// A request whose header fields are `fields` (each ending in CRLF).
    init(
        _ name: String, fields: String, version: String = "HTTP/1.1", body: String = "",
        _ expected: ExpectedError
    ) {
        self.init(name, "POST /x \(version)\r\n\(fields)\r\n\(body)", expected)
    }
}

private let errorCases: [ErrorCase] = [
    ErrorCase(
        "request line without version", "GET /\r\nHost: h\r\n\r\n", .malformed(mentioning: "request line")),
    ErrorCase(
        "request line without spaces", "GET\r\nHost: h\r\n\r\n", .malformed(mentioning: "request line")),
    ErrorCase("trailing space", "GET / HTTP/1.1 \r\nHost: h\r\n\r\n", .malformed(mentioning: "two spaces")),
    ErrorCase(
        "space in target", "GET /a b HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "two spaces")),
    ErrorCase(
        "empty target", "GET  HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "target is empty")),
    ErrorCase("double space", "GET  / HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "two spaces")),
    ErrorCase(
        "method not a token", "G(T / HTTP/1.1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "cannot be in a method")),
    ErrorCase("empty method", " / HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "not a token")),
    ErrorCase(
        "control character in target", "GET /a\u{1}b HTTP/1.1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "control character")),
    ErrorCase(
        "tab in target", "GET /a\tb HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "control character")),
    ErrorCase(
        "bare CR in target", "GET /a\rb HTTP/1.1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "CR is not followed by LF")),
    ErrorCase(
        "non-ASCII target", "GET /caf\u{E9} HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "non-ASCII")),
    ErrorCase("fragment in target", "GET /a#b HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "'#'")),
    ErrorCase(
        "asterisk for GET", "GET * HTTP/1.1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "only valid for OPTIONS")),
    ErrorCase(
        "relative target", "GET library HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "start with '/'")
    ),
    ErrorCase(
        "ftp target", "GET ftp://h/x HTTP/1.1\r\nHost: h\r\n\r\n", .malformed(mentioning: "start with '/'")),
    ErrorCase(
        "authority-form", "CONNECT h:443 HTTP/1.1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "start with '/'")),
    ErrorCase(
        "absolute without host", "GET http:///x HTTP/1.1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "authority")),
    ErrorCase(
        "absolute with userinfo", "GET http://me@h/x HTTP/1.1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "authority")),
    ErrorCase(
        "lowercase version", "GET / http/1.1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "not an HTTP version")),
    ErrorCase(
        "two-digit minor", "GET / HTTP/1.10\r\nHost: h\r\n\r\n", .malformed(mentioning: "not an HTTP version")
    ),
    ErrorCase(
        "version without minor", "GET / HTTP/1\r\nHost: h\r\n\r\n",
        .malformed(mentioning: "not an HTTP version")),
    ErrorCase("HTTP/2.0", "GET / HTTP/2.0\r\nHost: h\r\n\r\n", .exactly(.unsupportedVersion("HTTP/2.0"))),
    ErrorCase("HTTP/3.0", "GET / HTTP/3.0\r\nHost: h\r\n\r\n", .exactly(.unsupportedVersion("HTTP/3.0"))),
    ErrorCase("HTTP/0.9", "GET / HTTP/0.9\r\nHost: h\r\n\r\n", .exactly(.unsupportedVersion("HTTP/0.9"))),
    ErrorCase(
        "HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", .exactly(.unsupportedVersion("HTTP/2.0"))),

    ErrorCase(
        "space before colon", fields: "Host : h\r\n", .malformed(mentioning: "whitespace before its colon")),
    ErrorCase("obs-fold", fields: "Host: h\r\nX-A: one\r\n two\r\n", .malformed(mentioning: "line folding")),
    ErrorCase("first field starts with tab", fields: "\tHost: h\r\n", .malformed(mentioning: "line folding")),
    ErrorCase("field without colon", fields: "Host: h\r\nNoColon\r\n", .malformed(mentioning: "no colon")),
    ErrorCase("empty field name", fields: "Host: h\r\n: v\r\n", .malformed(mentioning: "empty name")),
    ErrorCase(
        "field name not a token", fields: "Host: h\r\nX(: v\r\n",
        .malformed(mentioning: "not a valid field name")),
    ErrorCase(
        "non-ASCII field name", fields: "Host: h\r\nX-Caf\u{E9}: v\r\n",
        .malformed(mentioning: "not a valid field name")),
    ErrorCase(
        "NUL in value", fields: "Host: h\r\nX: a\u{0}b\r\n", .malformed(mentioning: "control character")),
    ErrorCase(
        "bare CR in value", fields: "Host: h\r\nX: a\rb\r\n",
        .malformed(mentioning: "CR is not followed by LF")),
    ErrorCase(
        "DEL in value", fields: "Host: h\r\nX: a\u{7F}\r\n", .malformed(mentioning: "control character")),

    ErrorCase("HTTP/1.1 without Host", fields: "Accept: */*\r\n", .malformed(mentioning: "must have a Host")),
    ErrorCase(
        "two Host fields", fields: "Host: a\r\nHost: a\r\n", .malformed(mentioning: "more than one Host")),
    ErrorCase(
        "two Host fields in HTTP/1.0", fields: "Host: a\r\nhost: b\r\n", version: "HTTP/1.0",
        .malformed(mentioning: "more than one Host")),
    ErrorCase("Host with a space", fields: "Host: a b\r\n", .malformed(mentioning: "not a valid host")),
    ErrorCase("Host with a path", fields: "Host: a/b\r\n", .malformed(mentioning: "not a valid host")),

    ErrorCase(
        "gzip transfer coding", fields: "Host: h\r\nTransfer-Encoding: gzip\r\n",
        .exactly(.unsupportedTransferCoding("gzip"))),
    ErrorCase(
        "gzip then chunked", fields: "Host: h\r\nTransfer-Encoding: gzip, chunked\r\n",
        .exactly(.unsupportedTransferCoding("gzip"))),
    ErrorCase(
        "chunked then gzip", fields: "Host: h\r\nTransfer-Encoding: chunked, gzip\r\n",
        .exactly(.unsupportedTransferCoding("gzip"))),
    ErrorCase(
        "gzip and chunked in two fields",
        fields: "Host: h\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n",
        .exactly(.unsupportedTransferCoding("gzip"))),
    ErrorCase(
        "chunked twice", fields: "Host: h\r\nTransfer-Encoding: chunked, chunked\r\n",
        .malformed(mentioning: "more than once")),
    ErrorCase(
        "empty Transfer-Encoding", fields: "Host: h\r\nTransfer-Encoding: , \r\n",
        .malformed(mentioning: "Transfer-Encoding field is empty")),
    ErrorCase(
        "Transfer-Encoding and Content-Length",
        fields: "Host: h\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n",
        .malformed(mentioning: "both Transfer-Encoding and Content-Length")),
    ErrorCase(
        "chunked in HTTP/1.0", fields: "Transfer-Encoding: chunked\r\n", version: "HTTP/1.0",
        .malformed(mentioning: "HTTP/1.0")),
    ErrorCase(
        "letters in Content-Length", fields: "Host: h\r\nContent-Length: abc\r\n",
        .malformed(mentioning: "decimal")),
    ErrorCase(
        "negative Content-Length", fields: "Host: h\r\nContent-Length: -1\r\n",
        .malformed(mentioning: "decimal")),
    ErrorCase(
        "signed Content-Length", fields: "Host: h\r\nContent-Length: +1\r\n",
        .malformed(mentioning: "decimal")),
    ErrorCase(
        "hex Content-Length", fields: "Host: h\r\nContent-Length: 0x1\r\n", .malformed(mentioning: "decimal")),
    ErrorCase(
        "empty Content-Length", fields: "Host: h\r\nContent-Length:\r\n", .malformed(mentioning: "decimal")),
    ErrorCase(
        "Content-Length list with an empty element", fields: "Host: h\r\nContent-Length: 1,\r\n",
        .malformed(mentioning: "decimal")),
    ErrorCase(
        "Content-Length with non-ASCII digits", fields: "Host: h\r\nContent-Length: \u{663}\r\n",
        .malformed(mentioning: "decimal")),
    ErrorCase(
        "different Content-Length fields", fields: "Host: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n",
        .malformed(mentioning: "different")),
    ErrorCase(
        "different Content-Length list values", fields: "Host: h\r\nContent-Length: 1, 2\r\n",
        .malformed(mentioning: "different")),

    ErrorCase(
        "unknown expectation", fields: "Host: h\r\nExpect: 200-ok\r\nContent-Length: 1\r\n",
        .exactly(.unsupportedExpectation("200-ok"))),
    ErrorCase(
        "unknown expectation in a list", fields: "Host: h\r\nExpect: 100-continue, foo\r\n",
        .exactly(.unsupportedExpectation("foo"))),

    ErrorCase(
        "chunk size not hex", fields: "Host: h\r\nTransfer-Encoding: chunked\r\n", body: "zz\r\n",
        .malformed(mentioning: "not hexadecimal")),
    ErrorCase(
        "chunk size followed by junk", fields: "Host: h\r\nTransfer-Encoding: chunked\r\n", body: "5x\r\n",
        .malformed(mentioning: "not hexadecimal")),
    ErrorCase(
        "empty chunk size line", fields: "Host: h\r\nTransfer-Encoding: chunked\r\n", body: "\r\n",
        .malformed(mentioning: "not hexadecimal")),
    ErrorCase(
        "chunk longer than its size", fields: "Host: h\r\nTransfer-Encoding: chunked\r\n",
        body: "5\r\nhelloX\r\n",
        .malformed(mentioning: "not followed by CRLF")),
    ErrorCase(
        "control character in chunk extension", fields: "Host: h\r\nTransfer-Encoding: chunked\r\n",
        body: "5;a=\u{0}\r\n", .malformed(mentioning: "chunk extension")),
    ErrorCase(
        "obs-fold in trailers", fields: "Host: h\r\nTransfer-Encoding: chunked\r\n",
        body: "0\r\nA: b\r\n c\r\n\r\n",
        .malformed(mentioning: "line folding")),
    ErrorCase(
        "trailer without colon", fields: "Host: h\r\nTransfer-Encoding: chunked\r\n",
        body: "0\r\nbad\r\n\r\n",
        .malformed(mentioning: "no colon")),
    // Refused at the first byte that gives them away, not when a line end arrives (it may never).
    ErrorCase(
        "a TLS ClientHello on the plain port", "\u{16}\u{3}\u{1}\u{0}\u{a5}\u{1}",
        .malformed(mentioning: "not TLS")),
    ErrorCase("a control byte in the method", "G\u{1}", .malformed(mentioning: "cannot be in a method")),
    ErrorCase(
        "a method longer than any", String(repeating: "A", count: 33),
        .malformed(mentioning: "longer than 32 bytes")),
    ErrorCase(
        "a bare CR ending the request line", "GET / HTTP/1.1\rHost: h\r\r", .malformed(mentioning: "CR")),
]

@Test(arguments: errorCases)
private func badRequestIsRefused(_ errorCase: ErrorCase) {
    let steps = feed(errorCase.text)
    guard steps.count == 1, case .error(let error) = steps[0] else {
        Issue.record("expected exactly one error, got \(steps)")
        return
    }
    switch errorCase.expected {
    case .exactly(let expected):
        #expect(error == expected)
    case .malformed(let phrase):
        guard case .malformed(let reason) = error else {
            Issue.record("expected .malformed mentioning \"\(phrase)\", got \(error)")
            return
        }
        #expect(reason.contains(phrase), "reason: \(reason)")
        #expect(error.status == .badRequest)
    }
}

@Test(arguments: errorCases)
private func badRequestIsRefusedWhenFedOneByteAtATime(_ errorCase: ErrorCase) {
    let whole = feed(errorCase.text)
    let byByte = feed(errorCase.text.utf8.map { [$0] }).steps
    #expect(byByte == whole)
}

@Test private func errorStateIsSticky() {
    var parser = HTTPRequestParser()
    parser.append("GET / HTTP/2.0\r\nHost: h\r\n\r\n")
    #expect(parser.nextStep() == .error(.unsupportedVersion("HTTP/2.0")))
    parser.append("GET / HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(parser.nextStep() == .error(.unsupportedVersion("HTTP/2.0")))
    #expect(parser.nextStep() == .error(.unsupportedVersion("HTTP/2.0")))
}

@Test private func errorAfterAGoodRequestLeavesTheGoodOneIntact() {
    let steps = feed(
        "GET /ok HTTP/1.1\r\nHost: h\r\n\r\nGET /bad HTTP/1.1\r\n\r\nGET /never HTTP/1.1\r\nHost: h\r\n\r\n")
    #expect(steps.count == 2)
    #expect(steps.first == .request(ParsedRequest("GET", "/ok", headers: ["Host: h"])))
    guard case .error(.malformed) = steps.last else {
        Issue.record("expected the Host-less request to be refused, got \(steps)")
        return
    }
}

@Test(arguments: [
    (HTTPParseError.malformed("a reason"), 400, "a reason"),
    (.targetTooLong, 414, "target"),
    (.headersTooLarge, 431, "header"),
    (.bodyTooLarge, 413, "body"),
    (.unsupportedTransferCoding("gzip"), 501, "'gzip'"),
    (.unsupportedVersion("HTTP/2.0"), 505, "'HTTP/2.0'"),
    (.unsupportedExpectation("200-ok"), 417, "'200-ok'"),
])
private func errorsMapToStatusAndDetail(_ error: HTTPParseError, _ code: Int, _ phrase: String) {
    #expect(error.status.code == code)
    #expect(error.detail.contains(phrase))
    #expect(error.detail.first?.isUppercase == true)
    #expect(error.detail.hasSuffix("."))
}

@Test private func statusesAreTheNamedOnes() {
    #expect(HTTPParseError.malformed("x").status == .badRequest)
    #expect(HTTPParseError.targetTooLong.status == .uriTooLong)
    #expect(HTTPParseError.headersTooLarge.status == .requestHeaderFieldsTooLarge)
    #expect(HTTPParseError.bodyTooLarge.status == .contentTooLarge)
    #expect(HTTPParseError.unsupportedTransferCoding("x").status == .notImplemented)
    #expect(HTTPParseError.unsupportedVersion("x").status == .httpVersionNotSupported)
    #expect(HTTPParseError.unsupportedExpectation("x").status == .expectationFailed)
}

// MARK: - Limits

@Test private func targetAtTheLimitIsAcceptedAndOneOverIsRefused() {
    let limits = HTTPParserLimits(maxTargetBytes: 16)
    let atLimit = "/" + String(repeating: "a", count: 15)
    #expect(
        feed("GET \(atLimit) HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits)
            == [.request(ParsedRequest("GET", atLimit, headers: ["Host: h"]))])
    #expect(
        firstStep("GET \(atLimit)a HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits) == .error(.targetTooLong))
}

@Test private func absoluteFormTargetIsMeasuredAsSent() {
    let limits = HTTPParserLimits(maxTargetBytes: 16)
    // 17 bytes as sent, though only "/a" once converted.
    #expect(
        firstStep("GET http://abcdefgh/a HTTP/1.1\r\nHost: h\r\n\r\n", limits: limits)
            == .error(.targetTooLong))
}

@Test private func overlongTargetIsRefusedBeforeItsLineEnds() {
    var parser = HTTPRequestParser(limits: HTTPParserLimits(maxTargetBytes: 16))
    parser.append("GET /" + String(repeating: "a", count: 15))
    #expect(parser.nextStep() == .needMoreData)
    parser.append("a")
    #expect(parser.nextStep() == .error(.targetTooLong))
}

@Test private func headAtTheLimitIsAcceptedAndOneOverIsRefused() {
    let base = "GET / HTTP/1.1\r\nHost: h\r\nX: \r\n\r\n"
    let limits = HTTPParserLimits(maxHeaderBytes: 64)
    let padding = String(repeating: "v", count: 64 - base.utf8.count)
    let atLimit = "GET / HTTP/1.1\r\nHost: h\r\nX: \(padding)\r\n\r\n"
    #expect(atLimit.utf8.count == 64)
    #expect(
        feed(atLimit, limits: limits) == [
            .request(ParsedRequest("GET", "/", headers: ["Host: h", "X: \(padding)"]))
        ])
    #expect(
        firstStep("GET / HTTP/1.1\r\nHost: h\r\nX: \(padding)v\r\n\r\n", limits: limits)
            == .error(.headersTooLarge))
}

@Test private func headLimitIgnoresLeadingEmptyLinesAndFollowingBody() {
    let head = "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 9\r\n\r\n"
    let limits = HTTPParserLimits(maxHeaderBytes: head.utf8.count)
    let steps = feed("\r\n\r\n" + head + "123456789", limits: limits)
    #expect(
        steps == [
            .request(
                ParsedRequest("POST", "/", headers: ["Host: h", "Content-Length: 9"], body: "123456789"))
        ])
}

@Test private func overlongHeadIsRefusedWithoutItsEmptyLine() {
    var parser = HTTPRequestParser(limits: HTTPParserLimits(maxHeaderBytes: 64))
    let start = "GET / HTTP/1.1\r\nHost: h\r\nX: "
    parser.append(start + String(repeating: "v", count: 64 - start.utf8.count))
    #expect(parser.nextStep() == .needMoreData)
    parser.append("v")
    #expect(parser.nextStep() == .error(.headersTooLarge))
}

@Test private func contentLengthAtTheLimitIsAcceptedAndOneOverIsRefusedAtOnce() {
    let limits = HTTPParserLimits(maxBodyBytes: 10)
    #expect(
        feed("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 10\r\n\r\n0123456789", limits: limits)
            == [
                .request(
                    ParsedRequest(
                        "POST", "/", headers: ["Host: h", "Content-Length: 10"], body: "0123456789"))
            ])
    // Refused from the head alone, before any body byte arrives.
    #expect(
        firstStep("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n", limits: limits)
            == .error(.bodyTooLarge))
    #expect(
        firstStep(
            "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999999\r\n\r\n", limits: limits)
            == .error(.bodyTooLarge))
}

@Test private func chunkedBodyAtTheLimitIsAcceptedAndOneOverIsRefused() {
    let limits = HTTPParserLimits(maxBodyBytes: 10)
    let head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
    #expect(
        feed(head + "4\r\n0123\r\n6\r\n456789\r\n0\r\n\r\n", limits: limits)
            == [
                .request(
                    ParsedRequest(
                        "POST", "/", headers: ["Host: h", "Transfer-Encoding: chunked"], body: "0123456789"))
            ])
    // The sum goes over with the second size line, before its data.
    #expect(firstStep(head + "4\r\n0123\r\n7\r\n", limits: limits) == .error(.bodyTooLarge))
    #expect(firstStep(head + "B\r\n", limits: limits) == .error(.bodyTooLarge))
    #expect(firstStep(head + "FFFFFFFFFFFFFFFFFFFFFFFF\r\n", limits: limits) == .error(.bodyTooLarge))
}

@Test private func trailerSectionIsBoundedByTheHeadLimit() {
    let limits = HTTPParserLimits(maxHeaderBytes: 128)
    let head = "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"
    let trailerStart = "T: "
    let padding = String(repeating: "t", count: 128 - trailerStart.utf8.count - 4)
    let atLimit = trailerStart + padding + "\r\n\r\n"
    #expect(atLimit.utf8.count == 128)
    #expect(
        feed(head + atLimit, limits: limits)
            == [.request(ParsedRequest("POST", "/", headers: ["Host: h", "Transfer-Encoding: chunked"]))])
    #expect(
        firstStep(head + trailerStart + padding + "t\r\n\r\n", limits: limits) == .error(.headersTooLarge))
}

@Test private func chunkSizeLineIsBoundedByTheHeadLimit() {
    var parser = HTTPRequestParser(limits: HTTPParserLimits(maxHeaderBytes: 128))
    parser.append("POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5;")
    #expect(parser.nextStep() == .needMoreData)
    parser.append(String(repeating: "e", count: 200))
    guard case .error(.malformed(let reason)) = parser.nextStep() else {
        Issue.record("an endless chunk extension must be refused")
        return
    }
    #expect(reason.contains("chunk-size line"))
}
