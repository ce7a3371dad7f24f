// Unthrottled YUYV encode rate: what the capture thread does per YUYV frame (packed 4:2:2
// to planar 4:2:2, range expansion, libturbojpeg compression), in a loop, on one picture.
// Usage: shutter-encode-bench PICTURE.ppm [quality] [seconds] [--overlay TEXT]
//        [--mjpeg-overlay FRAME.jpg TEXT] [--transform FRAME.jpg DEGREES]
// --overlay draws the burned-in text (DejaVu Sans Mono, bottom-left) into every frame before
// the encode, as the capture thread does for the preview. --mjpeg-overlay measures an MJPEG
// camera's overlay path instead (decode to planar Y'CbCr, draw, encode) and --transform the
// lossless rotation of a JPEG (tjTransform), each on the given frame.
// Prints one JSON line. benchmarks/camera_bench.py and overlay_bench.py run it beside tjbench.
import ShutterCamera
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

let arguments = CommandLine.arguments
guard arguments.count >= 2, let file = fopen(arguments[1], "rb") else {
    print("usage: shutter-encode-bench PICTURE.ppm [quality] [seconds]")
    exit(2)
}
let quality = arguments.count > 2 ? Int(arguments[2]) ?? 85 : 85
let seconds = arguments.count > 3 ? Double(arguments[3]) ?? 5 : 5

// A binary PPM: "P6\n<width> <height>\n255\n" then RGB triplets.
var header: [String] = []
var token = ""
while header.count < 4 {
    let c = fgetc(file)
    guard c != EOF else { exit(2) }
    let character = Character(UnicodeScalar(UInt8(c)))
    if character.isWhitespace {
        if !token.isEmpty { header.append(token) }
        token = ""
    } else {
        token.append(character)
    }
}
guard header[0] == "P6", let width = Int(header[1]), let height = Int(header[2]) else {
    print("not a binary PPM")
    exit(2)
}
var rgb = [UInt8](repeating: 0, count: width * height * 3)
_ = rgb.withUnsafeMutableBytes { fread($0.baseAddress, 1, $0.count, file) }
fclose(file)

// RGB to packed YUYV, BT.601 limited range, as a UVC camera would deliver it.
var yuyv = [UInt8](repeating: 0, count: width * height * 2)
for y in 0..<height {
    for x in stride(from: 0, to: width, by: 2) {
        func ycc(_ px: Int) -> (Double, Double, Double) {
            let i = (y * width + px) * 3
            let (r, g, b) = (Double(rgb[i]), Double(rgb[i + 1]), Double(rgb[i + 2]))
            return (
                16 + (65.481 * r + 128.553 * g + 24.966 * b) / 255,
                128 + (-37.797 * r - 74.203 * g + 112.0 * b) / 255,
                128 + (112.0 * r - 93.786 * g - 18.214 * b) / 255
            )
        }
        let (y0, cb0, cr0) = ycc(x)
        let (y1, cb1, cr1) = ycc(x + 1)
        let o = (y * width + x) * 2
        yuyv[o] = UInt8(y0.rounded())
        yuyv[o + 1] = UInt8(((cb0 + cb1) / 2).rounded())
        yuyv[o + 2] = UInt8(y1.rounded())
        yuyv[o + 3] = UInt8(((cr0 + cr1) / 2).rounded())
    }
}

/// The value after `flag` on the command line, or nil.
@MainActor func option(_ flag: String, _ offset: Int = 1) -> String? {
    guard let index = arguments.firstIndex(of: flag), index + offset < arguments.count else { return nil }
    return arguments[index + offset]
}

let encoder = try JPEGEncoder(quality: quality)
var planar = YUVImage(width: width, height: height, subsampling: .yuv422)
let clock = SystemClock()
let start = clock.monotonicNow()
let budget = UInt64(seconds * 1e9)
var frames = 0
var bytes = 0
let overlayText = option("--overlay") ?? option("--mjpeg-overlay", 2)
let template = overlayText.flatMap { OverlayTemplate($0) }
let overlay = template.map { _ in TextOverlay(style: .init()) }
/// The frame's text, expanded and drawn as the capture loop does for each frame.
@MainActor func drawOverlay(into image: inout YUVImage, frame: Int) {
    guard let template, let overlay else { return }
    let fields = OverlayTemplate.Fields(
        wallMilliseconds: 1_700_000_000_000 + Int64(frame) * 33, camera: "bench", frame: UInt64(frame),
        width: image.width, height: image.height)
    overlay.draw(template.expand(fields, utc: false), into: &image)
}

if let path = option("--mjpeg-overlay") ?? option("--transform") {
    guard let file = fopen(path, "rb") else { exit(2) }
    var jpeg: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = fread(&chunk, 1, chunk.count, file)
        if count <= 0 { break }
        jpeg += chunk[..<count]
    }
    fclose(file)
    let transformer = try option("--transform", 2).flatMap { Int($0) }.flatMap {
        Orientation(rotation: $0, flip: .none)
    }.map { try JPEGTransformer(orientation: $0) }
    let planarDecoder = try JPEGDecoder.PlanarDecoder()
    while clock.monotonicNow().nanoseconds(since: start) < budget {
        if let transformer {
            bytes = try transformer.transform(jpeg, encoder: encoder).jpeg.count
        } else {
            // As the capture loop does: one decompressor kept, the text drawn in the encoder's buffer.
            let image = try planarDecoder.decode(jpeg)
            if let template, let overlay {
                let lines = template.expand(
                    OverlayTemplate.Fields(
                        wallMilliseconds: 1_700_000_000_000 + Int64(frames) * 33, camera: "bench",
                        frame: UInt64(frames), width: image.width, height: image.height), utc: false)
                bytes = try encoder.encode(image) { overlay.draw(lines, intoPlanes: $0, of: image) }.count
            } else {
                bytes = try encoder.encode(image).count
            }
        }
        frames += 1
    }
    let elapsed = Double(clock.monotonicNow().nanoseconds(since: start)) / 1e9
    print(
        "{\"mode\": \"\(transformer == nil ? "mjpeg-overlay" : "transform")\", \"frames\": \(frames), \"fps\": \(Double(frames) / elapsed), \"ms_per_frame\": \(elapsed * 1000 / Double(frames)), \"jpeg_bytes\": \(bytes)}"
    )
    exit(0)
}

while clock.monotonicNow().nanoseconds(since: start) < budget {
    _ = yuyv.withUnsafeBytes {
        PixelConversion.convertYUYV($0, bytesPerLine: width * 2, into: &planar, fullRange: true)
    }
    if let template, let overlay {
        // As the capture loop does: drawn in the encoder's buffer, the frame left as it is.
        let fields = OverlayTemplate.Fields(
            wallMilliseconds: 1_700_000_000_000 + Int64(frames) * 33, camera: "bench", frame: UInt64(frames),
            width: width, height: height)
        let lines = template.expand(fields, utc: false)
        bytes = try encoder.encode(planar) { overlay.draw(lines, intoPlanes: $0, of: planar) }.count
    } else {
        bytes = try encoder.encode(planar).count
    }
    frames += 1
}
let elapsed = Double(clock.monotonicNow().nanoseconds(since: start)) / 1e9
if CommandLine.arguments.contains("--split") {
    var t = clock.monotonicNow()
    for _ in 0..<200 {
        _ = yuyv.withUnsafeBytes {
            PixelConversion.convertYUYV($0, bytesPerLine: width * 2, into: &planar, fullRange: true)
        }
    }
    print("convert ms", Double(clock.monotonicNow().nanoseconds(since: t)) / 200e6)
    t = clock.monotonicNow()
    for _ in 0..<200 { _ = try encoder.encode(planar) }
    print("encode ms", Double(clock.monotonicNow().nanoseconds(since: t)) / 200e6)
}
print(
    "{\"width\": \(width), \"height\": \(height), \"quality\": \(quality), \"overlay\": \(overlay != nil), \"frames\": \(frames), \"fps\": \(Double(frames) / elapsed), \"jpeg_bytes\": \(bytes)}"
)
