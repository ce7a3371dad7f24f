// Fuzzes the multipart writer of GET /preview.mjpg: the head PreviewPart writes before each frame
// (Content-Length, X-Timestamp, X-Frame-Sequence) from bytes, with the shared decimal writer (JSONBytes).
//
// An input's first 8 bytes are the frame's sequence, the next 8 its wall time in milliseconds
// (any Int64, negative too), the next one the zero-padding asked of the decimal writer, the rest
// the frame. The head must read back as a browser's multipart parser reads it: the frame's
// length, its time in seconds with three decimals (0 before 1970), its sequence; the frame, cut
// at that length, is the frame whatever bytes it holds (a boundary inside one included).
import FuzzSupport
import ShutterCapture
import ShutterSystem

@testable import ShutterAPI

func integer(_ bytes: ArraySlice<UInt8>) -> UInt64 {
    bytes.reduce(0) { $0 << 8 | UInt64($1) }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    guard bytes.count >= 17 else { return 0 }
    let sequence = integer(bytes[0..<8])
    let wallMilliseconds = Int64(bitPattern: integer(bytes[8..<16]))
    let digits = Int(bytes[16]) % 32
    let jpeg = Array(bytes[17...])

    var decimal: [UInt8] = []
    JSONBytes.appendDecimal(sequence, to: &decimal, minimumDigits: digits)
    let plain = String(sequence)
    let padded = String(repeating: "0", count: max(0, min(digits, 20) - plain.count)) + plain
    invariant(
        String(decoding: decimal, as: UTF8.self) == padded, "\(sequence) with \(digits) digits: \(decimal)")

    let frame = EncodedFrame(
        sequence: sequence, capturedAt: MonotonicInstant(nanoseconds: 0), wallMilliseconds: wallMilliseconds,
        width: 640, height: 480, jpeg: jpeg)
    let part = PreviewPart(frame)
    let written = part.head + part.jpeg + PreviewStream.partEnd
    guard let endOfHead = findSequence(Array("\r\n\r\n".utf8), in: written) else {
        invariant(false, "no blank line after the part's head")
        return 0
    }
    var fields: [String: String] = [:]
    for line in String(decoding: written[..<endOfHead], as: UTF8.self).split(separator: "\r\n") {
        let pair = line.split(separator: ":", maxSplits: 1)
        invariant(pair.count == 2, "a head line without a colon: \(line)")
        fields[String(pair[0])] = pair[1].drop(while: { $0 == " " }).description
    }
    let milliseconds = UInt64(max(0, wallMilliseconds))
    let time = "\(milliseconds / 1000)." + String(String(milliseconds % 1000 + 1000).dropFirst())
    invariant(fields["Content-Type"] == "image/jpeg", "Content-Type \(fields["Content-Type"] ?? "none")")
    invariant(
        fields["Content-Length"] == String(jpeg.count), "Content-Length \(fields["Content-Length"] ?? "none")"
    )
    invariant(
        fields["X-Timestamp"] == time,
        "X-Timestamp \(fields["X-Timestamp"] ?? "none") for \(wallMilliseconds)")
    invariant(fields["X-Frame-Sequence"] == plain, "X-Frame-Sequence \(fields["X-Frame-Sequence"] ?? "none")")
    let bodyStart = endOfHead + 4
    invariant(Array(written[bodyStart..<(bodyStart + jpeg.count)]) == jpeg, "the frame changed")
    invariant(
        Array(written[(bodyStart + jpeg.count)...]) == PreviewStream.partEnd,
        "no boundary after the frame's length")
    return 0
}

/// The offset of the first `needle` in `haystack`.
func findSequence(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
    guard haystack.count >= needle.count else { return nil }
    for index in 0...(haystack.count - needle.count)
    where haystack[index..<(index + needle.count)].elementsEqual(needle) {
        return index
    }
    return nil
}

runLibFuzzer(testOneInput)
