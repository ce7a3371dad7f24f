// Fuzzes the conditional and range headers of GET /media and /thumbnails: RepresentationValidators
// (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since, If-Range, Range).
//
// An input is header lines (`Name: value`, one per line). Whatever they say, a partial answer
// must be a non-empty range inside the representation, for a file of any length.
import FuzzSupport
import ShutterHTTP
import ShutterSystem

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    var headers = HTTPHeaders()
    for line in bytes.split(separator: UInt8(ascii: "\n")) {
        guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { continue }
        let name = String(decoding: line[..<colon], as: UTF8.self)
        let value = String(decoding: line[(colon + 1)...], as: UTF8.self).trimmingSpaces()
        headers.add(name: name, value: String(value))
        _ = Timestamp.parseHTTPDate(String(value))
    }
    var random = InputDerivedRandom(bytes)
    let lengths = [0, 1, 1023, 20480, Int.max - 1, random.next(in: 0...(1 << 40))]
    for length in lengths {
        let validators = RepresentationValidators(
            etag: "\"2-151234\"", lastModified: 1_764_662_400, length: length)
        if case .partial(let range) = validators.evaluate(headers) {
            invariant(range.lowerBound >= 0, "range \(range) starts before the file")
            invariant(range.upperBound <= length, "range \(range) ends after \(length) bytes")
            invariant(!range.isEmpty, "empty range \(range)")
        }
    }
    return 0
}

runLibFuzzer(testOneInput)
