// Fuzzes what ShutterAccess reads from a request before deciding who it is from: the
// Authorization header (Bearer and Basic), a signed link's `exp` and `sig` parameters, the
// redaction of `sig` for the logs, and a token file's lines.
//
// An input's first line is the Authorization value, the rest the query of a /media target.
import FuzzSupport
import ShutterHTTP
import ShutterSystem

@testable import ShutterAccess

let links = SignedLinks(key: Array("fuzzing key, not a secret".utf8))
let path = "/media/12.jpg"

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    let newline = bytes.firstIndex(of: UInt8(ascii: "\n")) ?? bytes.endIndex
    let authorization = String(decoding: bytes[..<newline], as: UTF8.self)
    let query = String(decoding: bytes[min(newline + 1, bytes.endIndex)...], as: UTF8.self)

    var headers = HTTPHeaders()
    headers.add(name: "Authorization", value: authorization)
    if case .token(let token) = PresentedCredential(headers) {
        invariant(token.count <= authorization.utf8.count, "a token longer than the header")
    }

    let target = "\(path)?\(query)"
    let request = HTTPRequest(method: .get, target: target)
    switch links.check(request, path: path, nowSeconds: 1_764_662_400) {
    case .valid(let kept, _):
        invariant(!kept.contains("sig="), "the kept target \(kept) still has a signature")
    case .absent, .expired, .invalid: break
    }
    let redacted = SignedLinks.redactingSignature(target)
    if let question = redacted.utf8.firstIndex(of: UInt8(ascii: "?")) {
        // Found and split by bytes, as the server reads a query: by Character, a combining mark
        // after "&" would join it to the pair before (found by this target: "&sig=&\u{30E}P..."
        // read as one pair "sig=-&\u{30E}P..." that redaction had rightly left alone), and one
        // after the "?" would hide it, so that a later "?sig=" looked like the first pair (also
        // found by this target: "?\u{30E}&&?sig=&..." read from the second "?").
        let query = String(decoding: redacted.utf8[redacted.utf8.index(after: question)...], as: UTF8.self)
        for pair in query.splitASCII(UInt8(ascii: "&")) where pair.hasPrefix("sig=") {
            invariant(pair == "sig=-", "redacted \(redacted) still shows a signature")
        }
    }

    // A link this key made is valid until it expires, whatever expiry the input picks.
    var random = InputDerivedRandom(bytes)
    let expiresAt = Int64(random.next(in: 0...999_999_999_999))
    let link = links.link(path: path, expiresAt: expiresAt)
    let verdict = links.check(HTTPRequest(method: .get, target: link), path: path, nowSeconds: expiresAt)
    invariant(verdict == .valid(target: path, expiresAt: expiresAt), "own link \(link): \(verdict)")

    if let tokens = try? AccessTokens.parse(String(decoding: bytes, as: UTF8.self), source: "fuzz") {
        _ = tokens.scope(of: Array(bytes.prefix(64)))
    }
    return 0
}

runLibFuzzer(testOneInput)
