// Fuzzes HTTPRequestParser, the first code every byte from a client meets.
//
// Each input is parsed twice: whole, and cut into pieces of 1 to 256 bytes (as a socket may
// deliver it). Neither may crash, each parsed request must respect the limits, and both must
// yield the same requests and the same error: what the parser decides cannot depend on how the
// bytes arrived.
// Small limits, so the fuzzer reaches each of them (and the bytes just past it) quickly.
import FuzzSupport
import ShutterHTTP

let limits = HTTPParserLimits(maxHeaderBytes: 1024, maxTargetBytes: 256, maxBodyBytes: 2048)

/// What a parse produced, comparable between the two ways of feeding it.
struct Outcome: Equatable {
    var requests: [String] = []
    var error: HTTPParseError?
}

func parse(_ bytes: [UInt8], pieceSizes: (() -> Int)?) -> Outcome {
    var parser = HTTPRequestParser(limits: limits)
    var outcome = Outcome()
    var offset = 0
    feeding: while offset < bytes.count {
        let end = min(bytes.count, offset + (pieceSizes?() ?? bytes.count))
        parser.append(Array(bytes[offset..<end]))
        offset = end
        while true {
            switch parser.next() {
            case .needMoreData:
                invariant(parser.bufferedByteCount >= 0, "buffered byte count is negative")
                continue feeding
            case .sendContinue:
                continue
            case .request(let request):
                check(request)
                outcome.requests.append(summary(request))
            case .error(let error):
                invariant((400...505).contains(error.status.code), "error status \(error.status.code)")
                outcome.error = error
                break feeding
            }
        }
    }
    return outcome
}

func check(_ request: HTTPRequest) {
    invariant(request.target.utf8.count <= limits.maxTargetBytes, "target over maxTargetBytes")
    invariant(request.body.count <= limits.maxBodyBytes, "body over maxBodyBytes")
    // Bytes as sent: the parser reads a value as UTF-8 and repairs an invalid byte into U+FFFD
    // (3 bytes), so a repaired character counts as the one byte it may have been.
    let headerBytes = request.headers.reduce(0) { $0 + wireBytes($1.name) + wireBytes($1.value) }
    invariant(headerBytes <= limits.maxHeaderBytes, "header fields over maxHeaderBytes")
    invariant(request.version.major == 1, "version \(request.version)")
    for field in request.headers {
        invariant(!field.name.isEmpty, "empty header name")
        invariant(
            !field.value.utf8.contains(where: { $0 == 0 || $0 == 0x0A || $0 == 0x0D }),
            "NUL, CR or LF in the value of \(field.name)")
    }
    invariant(request.target.first == "/" || request.target == "*", "target \(request.target)")
}

func wireBytes(_ text: String) -> Int {
    text.unicodeScalars.reduce(0) { $0 + ($1 == "\u{FFFD}" ? 1 : UTF8.width($1)) }
}

func summary(_ request: HTTPRequest) -> String {
    let headers = request.headers.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    return "\(request.method) \(request.target) \(request.version)\n\(headers)\n\n\(request.body)"
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    let whole = parse(bytes, pieceSizes: nil)
    var random = InputDerivedRandom(bytes)
    let pieces = parse(bytes, pieceSizes: { 1 << random.next(in: 0...8) })
    invariant(whole == pieces, "whole: \(whole)\npieces: \(pieces)")
    return 0
}

runLibFuzzer(testOneInput)
