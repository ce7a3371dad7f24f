// Fuzzes the V4L2 frame path with mutated camera frames: V4L2FrameDecoder checks an MJPEG
// frame (MJPEGRepair: SOI, segments, SOS, EOI) and completes it with the standard Huffman
// tables, and converts YUYV, NV12 and YU12 frames of any length; the capture loop then decodes
// an MJPEG frame with TurboJPEG when an overlay is drawn on it, as done here.
//
// A frame that is not whole must come out as `.corrupt`, never as a crash, and a repaired frame
// must start with SOI and end with EOI.
// One decompressor for every input, as the capture thread keeps one; libFuzzer calls
// testOneInput on one thread only.
import FuzzSupport

@testable import ShutterCamera

nonisolated(unsafe) let planarDecoder = try! JPEGDecoder.PlanarDecoder()
// The largest picture decoded here (4096x4096): bounds the planes a forged SOF size allocates.
let largestDecodedPixels = 4096 * 4096

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    var random = InputDerivedRandom(bytes)
    var mjpeg = V4L2FrameDecoder(pixelFormat: .mjpeg, width: 640, height: 480, bytesPerLine: 0)
    let outcome = bytes.withUnsafeBytes { mjpeg.decode($0) }
    if case .image(.jpeg(let jpeg), let width, let height) = outcome {
        invariant(jpeg.starts(with: [0xFF, 0xD8]), "a repaired frame without SOI")
        invariant(Array(jpeg.suffix(2)) == [0xFF, 0xD9], "a repaired frame without EOI")
        invariant(width > 0 && height > 0, "a frame of \(width)x\(height)")
        if let header = try? JPEGDecoder.header(of: jpeg),
            header.width * header.height <= largestDecodedPixels
        {
            _ = try? planarDecoder.decode(jpeg)
        }
    }

    // The same bytes as a raw frame of a small size the driver may have negotiated.
    let formats: [(PixelFormat, bytesPerPixel: Int)] = [(.yuyv, 2), (.nv12, 1), (.yuv420, 1)]
    let (format, bytesPerPixel) = formats[random.next(in: 0...2)]
    let width = 2 * random.next(in: 1...32)
    let height = 2 * random.next(in: 1...32)
    let bytesPerLine = width * bytesPerPixel + random.next(in: 0...8)
    var raw = V4L2FrameDecoder(pixelFormat: format, width: width, height: height, bytesPerLine: bytesPerLine)
    switch bytes.withUnsafeBytes({ raw.decode($0) }) {
    case .image(.yuv(let image), _, _):
        let needed = PixelConversion.requiredByteCount(
            for: format, width: width, height: height, bytesPerLine: bytesPerLine)
        invariant(needed.map { bytes.count >= $0 } ?? false, "converted \(bytes.count) bytes, too few")
        invariant(image.width == width && image.height == height, "image of the wrong size")
    case .image(.jpeg, _, _):
        invariant(false, "a raw frame came out as a JPEG")
    case .corrupt, .image: break
    }
    return 0
}

runLibFuzzer(testOneInput)
