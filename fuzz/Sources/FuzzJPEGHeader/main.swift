// Fuzzes the JPEG header reader and decoders with mutated files: JPEGDecoder.header(of:) sizes
// thumbnails of stored pictures (GET /thumbnails) and checks uploads; decodeYUV and decodeRGB
// decode them.
//
// Whatever the bytes, each call returns or throws; a header it reads has a positive size.
// The largest picture decoded here (4096x4096): bounds the planes a forged SOF size allocates.
import FuzzSupport
import ShutterCamera

let largestDecodedPixels = 4096 * 4096

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    guard let header = try? JPEGDecoder.header(of: bytes) else { return 0 }
    invariant(header.width > 0 && header.height > 0, "a header of \(header.width)x\(header.height)")
    guard header.width * header.height <= largestDecodedPixels else { return 0 }
    if let image = try? JPEGDecoder.decodeYUV(bytes) {
        invariant(image.width == header.width && image.height == header.height, "decoded to another size")
    }
    if let decoded = try? JPEGDecoder.decodeRGB(bytes) {
        invariant(decoded.pixels.count == decoded.width * decoded.height * 3, "RGB pixels of the wrong count")
    }
    return 0
}

runLibFuzzer(testOneInput)
