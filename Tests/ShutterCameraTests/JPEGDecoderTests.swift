import CTurboJPEG
import Testing

@testable import ShutterCamera

@Suite struct JPEGDecoderTests {
    @Test func garbageIsAJPEGErrorNamingTheCall() {
        let error = #expect(throws: JPEGError.self) { try JPEGDecoder.header(of: [1, 2, 3, 4, 5]) }
        #expect(error?.call == "tjDecompressHeader3")
        #expect(error?.message.isEmpty == false)
        #expect(throws: JPEGError.self) { try JPEGDecoder.decodeRGB([0xFF, 0xD8, 0xFF]) }
        #expect(throws: JPEGError.self) { try JPEGDecoder.header(of: []) }
    }

    @Test func subsamplingOtherThan420Or422IsNil() throws {
        // A 4:4:4 JPEG made straight from RGB with TurboJPEG, as some cameras deliver.
        let width: Int32 = 16
        let height: Int32 = 8
        let rgb = [UInt8](repeating: 200, count: Int(width * height) * 3)
        let handle = try #require(tjInitCompress())
        defer { tjDestroy(handle) }
        var buffer: UnsafeMutablePointer<UInt8>? = nil
        var size: UInt = 0
        let result = tjCompress2(
            handle, rgb, width, 0, height, Int32(TJPF_RGB.rawValue), &buffer, &size,
            Int32(TJSAMP_444.rawValue), 90, 0)
        #expect(result == 0)
        defer { tjFree(buffer) }
        let jpeg = Array(UnsafeBufferPointer(start: buffer, count: Int(size)))
        let header = try JPEGDecoder.header(of: jpeg)
        #expect(header.width == 16 && header.height == 8)
        #expect(header.subsampling == nil)
        let decoded = try JPEGDecoder.decodeRGB(jpeg)
        #expect(decoded.pixels.count == 16 * 8 * 3)
        #expect(decoded.pixels.allSatisfy { abs(Int($0) - 200) <= 2 })
    }
}
