// Unthrottled YUYV encode rate: what the capture thread does per YUYV frame (packed 4:2:2
// to planar 4:2:2, range expansion, libturbojpeg compression), in a loop, on one picture.
// Usage: shutter-encode-bench PICTURE.ppm [quality] [seconds] [--overlay TEXT | --overlay-copy TEXT]
//        [--overlay-pairs TEXT] [--mjpeg-overlay FRAME.jpg TEXT] [--transform FRAME.jpg DEGREES]
// --overlay draws the burned-in text (DejaVu Sans Mono, bottom-left) into every frame before
// the encode, in place, as the capture thread does for the preview on a YUYV camera;
// --overlay-copy draws it in the encoder's copy of the planes instead (the path for planes
// kept clean for pictures, and the only one before the decoder lent its canvas); --overlay-pairs
// runs all three in one process, in alternated turns of 10 frames, with CPU time per frame. --mjpeg-overlay measures an MJPEG
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
let overlayText = option("--overlay") ?? option("--overlay-copy") ?? option("--mjpeg-overlay", 2)
let drawInEncodersCopy = arguments.contains("--overlay-copy")
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

/// CPU time this thread has used, in nanoseconds (CLOCK_THREAD_CPUTIME_ID): what a frame
/// costs however busy the machine's other cores are.
func threadCPUNanoseconds() -> UInt64 {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
}

/// --overlay-pairs: the YUYV path without the text, with it drawn in place, and with it drawn in
/// the encoder's copy, in one process, in turns of 10 frames each until `seconds` are up, each
/// variant timed on the thread's CPU clock and the wall clock: a neighbour's build slows all
/// three alike instead of whichever ran during it.
@MainActor func overlayPairs(text: String) throws {
    guard let template = OverlayTemplate(text) else { exit(2) }
    let overlay = TextOverlay(style: .init())
    let encoder = try JPEGEncoder(quality: quality)
    let (width, height, packed) = (width, height, yuyv)
    var planar = YUVImage(width: width, height: height, subsampling: .yuv422)
    let names = ["plain", "in_place", "encoders_copy"]
    var cpu = [UInt64](repeating: 0, count: 3)
    // Each turn's CPU time per variant, for the median of the turns' ratios: a turn that a
    // neighbour's burst slowed (caches, the other hyperthread) is one outlier, not a shift.
    var turns: [[UInt64]] = []
    var wall = [UInt64](repeating: 0, count: 3)
    var frames = [Int](repeating: 0, count: 3)
    var jpegBytes = [Int](repeating: 0, count: 3)
    var sequence = 0
    let started = clock.monotonicNow()
    while clock.monotonicNow().nanoseconds(since: started) < budget {
        var turn = [UInt64](repeating: 0, count: 3)
        // Each turn starts with the next variant, so none always follows the same one.
        for position in 0..<3 {
            let variant = (position + turns.count) % 3
            let (cpuBefore, wallBefore) = (threadCPUNanoseconds(), clock.monotonicNow())
            for _ in 0..<10 {
                _ = packed.withUnsafeBytes {
                    PixelConversion.convertYUYV($0, bytesPerLine: width * 2, into: &planar, fullRange: true)
                }
                let lines = template.expand(
                    OverlayTemplate.Fields(
                        wallMilliseconds: 1_700_000_000_000 + Int64(sequence) * 33, camera: "bench",
                        frame: UInt64(sequence), width: width, height: height), utc: false)
                switch variant {
                case 0:
                    jpegBytes[0] += try encoder.encode(planar).count
                case 1:
                    overlay.draw(lines, into: &planar)
                    jpegBytes[1] += try encoder.encode(planar).count
                default:
                    let plain = planar
                    jpegBytes[2] += try encoder.encode(plain) {
                        overlay.draw(lines, intoPlanes: $0, of: plain)
                    }
                    .count
                }
                sequence += 1
            }
            turn[variant] = threadCPUNanoseconds() - cpuBefore
            cpu[variant] += turn[variant]
            wall[variant] += clock.monotonicNow().nanoseconds(since: wallBefore)
            frames[variant] += 10
        }
        turns.append(turn)
    }
    func medianCost(_ variant: Int) -> Double {
        let ratios = turns.map { Double($0[variant]) / Double($0[0]) - 1 }.sorted()
        return ratios.count % 2 == 1
            ? ratios[ratios.count / 2] : (ratios[ratios.count / 2 - 1] + ratios[ratios.count / 2]) / 2
    }
    func perFrame(_ values: [UInt64]) -> String {
        (0..<3).map { "\"\(names[$0])\": \(Double(values[$0]) / Double(frames[$0]) / 1e6)" }.joined(
            separator: ", ")
    }
    let averageBytes = (0..<3).map { "\"\(names[$0])\": \(jpegBytes[$0] / frames[$0])" }.joined(
        separator: ", ")
    print(
        "{\"mode\": \"overlay-pairs\", \"frames_each\": \(frames[0]), \"cpu_ms_per_frame\": {\(perFrame(cpu))}, \"wall_ms_per_frame\": {\(perFrame(wall))}, \"jpeg_bytes\": {\(averageBytes)}, \"turns\": \(turns.count), \"median_turn_cpu_cost\": {\"in_place\": \(medianCost(1)), \"encoders_copy\": \(medianCost(2))}}"
    )
}

if let text = option("--overlay-pairs") {
    try overlayPairs(text: text)
    exit(0)
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
            // As the capture loop does: one decompressor kept, the text drawn in place on the
            // planes decoded for this frame (nobody else holds them).
            var image = try planarDecoder.decode(jpeg)
            if let template, let overlay {
                let lines = template.expand(
                    OverlayTemplate.Fields(
                        wallMilliseconds: 1_700_000_000_000 + Int64(frames) * 33, camera: "bench",
                        frame: UInt64(frames), width: image.width, height: image.height), utc: false)
                overlay.draw(lines, into: &image)
                bytes = try encoder.encode(image).count
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
        let fields = OverlayTemplate.Fields(
            wallMilliseconds: 1_700_000_000_000 + Int64(frames) * 33, camera: "bench", frame: UInt64(frames),
            width: width, height: height)
        let lines = template.expand(fields, utc: false)
        if drawInEncodersCopy {
            // The path for planes someone else holds: drawn in the encoder's buffer, the frame
            // left as it is (one copy of the planes per frame).
            bytes = try encoder.encode(planar) { overlay.draw(lines, intoPlanes: $0, of: planar) }.count
        } else {
            // As the capture loop does with the V4L2 decoder's lent canvas: `planar` is this
            // loop's alone, drawn on in place, and the next conversion overwrites the text.
            overlay.draw(lines, into: &planar)
            bytes = try encoder.encode(planar).count
        }
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
    "{\"width\": \(width), \"height\": \(height), \"quality\": \(quality), \"overlay\": \(overlay != nil), \"overlay_in_encoders_copy\": \(drawInEncodersCopy), \"frames\": \(frames), \"fps\": \(Double(frames) / elapsed), \"jpeg_bytes\": \(bytes)}"
)
