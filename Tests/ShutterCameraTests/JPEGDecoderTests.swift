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

    @Test func aTablesOnlyJPEGHasNoSizeAndIsAnError() throws {
        // Found by fuzz/ (FuzzJPEGHeader): TurboJPEG answers an abbreviated "tables-only" stream
        // (SOI, the tables, EOI: no frame header) with success and no size, which was read as a
        // 0x0 picture (a thumbnail's size, an upload's check).
        let jpeg = try JPEGEncoder(quality: 80).encode(YUVImage(width: 16, height: 16, subsampling: .yuv420))
        var tablesOnly: [UInt8] = [0xFF, 0xD8]
        var offset = 2
        while jpeg[offset + 1] != 0xC0 {  // Up to the frame header (SOF0), keeping DQT and DHT.
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            if jpeg[offset + 1] == 0xDB || jpeg[offset + 1] == 0xC4 {
                tablesOnly += jpeg[offset..<(offset + 2 + length)]
            }
            offset += 2 + length
        }
        tablesOnly += [0xFF, 0xD9]
        let error = #expect(throws: JPEGError.self) { try JPEGDecoder.header(of: tablesOnly) }
        #expect(error?.call == "tjDecompressHeader3")
        #expect(throws: JPEGError.self) { try JPEGDecoder.decodeYUV(tablesOnly) }
        #expect(throws: JPEGError.self) { try JPEGDecoder.decodeRGB(tablesOnly) }
    }

    /// A frame header can name 65500x65500 (libjpeg's own limit); the planes for that are 6 GB,
    /// allocated before the scan is read. Refused by every decode; the limit's edge still decodes.
    @Test func aHeaderNamingMoreThanTheLimitIsRefusedBeforeAnyDecode() throws {
        let jpeg = try JPEGEncoder(quality: 80).encode(YUVImage(width: 16, height: 16, subsampling: .yuv420))
        let frameHeader = try #require(jpeg.indices.first { jpeg[$0] == 0xFF && jpeg[$0 + 1] == 0xC0 })
        func sized(_ width: Int, _ height: Int) -> [UInt8] {
            var forged = jpeg
            forged[frameHeader + 5] = UInt8(height >> 8)
            forged[frameHeader + 6] = UInt8(height & 0xFF)
            forged[frameHeader + 7] = UInt8(width >> 8)
            forged[frameHeader + 8] = UInt8(width & 0xFF)
            return forged
        }
        for (width, height) in [(65500, 65500), (8193, 8192), (65500, 1025)] {
            let forged = sized(width, height)
            let error = #expect(throws: JPEGError.self) { try JPEGDecoder.header(of: forged) }
            #expect(error?.message == "\(width)x\(height) is over the 67-megapixel limit")
            #expect(throws: JPEGError.self) { try JPEGDecoder.decodeYUV(forged) }
            #expect(throws: JPEGError.self) { try JPEGDecoder.decodeRGB(forged) }
            #expect(throws: JPEGError.self) { try JPEGDecoder.decodeRGB(forged, minimumWidth: 16) }
        }
        #expect(try JPEGDecoder.header(of: sized(8192, 8192)).width == 8192)
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

    @Test func scaledDecodePicksTheSmallestScaleAtLeastTheWidthAsked() throws {
        let image = YUVImage(width: 1280, height: 720, subsampling: .yuv420)
        let jpeg = try JPEGEncoder(quality: 80).encode(image)
        let quarter = try JPEGDecoder.decodeRGB(jpeg, minimumWidth: 320)
        #expect(quarter.width == 320 && quarter.height == 180)
        #expect(quarter.pixels.count == 320 * 180 * 3)
        // 300 is between 1/4 (320) and 3/16 (not a TurboJPEG scale), so 1/4 again.
        #expect(JPEGDecoder.scaledSize(width: 1280, height: 720, minimumWidth: 300) == (320, 180))
        // 330 is just over 1/4: 3/8 is the next scale up.
        #expect(JPEGDecoder.scaledSize(width: 1280, height: 720, minimumWidth: 330) == (480, 270))
        // Below 1/8, 1/8 is the smallest there is.
        #expect(JPEGDecoder.scaledSize(width: 1280, height: 720, minimumWidth: 16) == (160, 90))
        // Wider than the picture: full size, never enlarged.
        #expect(JPEGDecoder.scaledSize(width: 1280, height: 720, minimumWidth: 5000) == (1280, 720))
        // Odd sizes round up, as TJSCALED does.
        #expect(JPEGDecoder.scaledSize(width: 641, height: 481, minimumWidth: 80) == (81, 61))
    }

    @Test func scaledDecodeReEncodesToAJPEGOfThatSize() throws {
        let image = YUVImage(width: 640, height: 480, subsampling: .yuv422)
        let jpeg = try JPEGEncoder(quality: 90).encode(image)
        let small = try JPEGDecoder.decodeRGB(jpeg, minimumWidth: 100)
        #expect(small.width == 160 && small.height == 120)
        let thumbnail = try JPEGEncoder(quality: 80).encodeRGB(
            small.pixels, width: small.width, height: small.height)
        let header = try JPEGDecoder.header(of: thumbnail)
        #expect(header.width == 160 && header.height == 120 && header.subsampling == .yuv420)
        // Limited-range black stays black through the full-range expansion and back.
        #expect(try JPEGDecoder.decodeRGB(thumbnail).pixels.allSatisfy { $0 <= 4 })
        #expect(throws: JPEGError.self) {
            try JPEGEncoder(quality: 80).encodeRGB([0, 0], width: 1, height: 1)
        }
    }

    /// The overlay's MJPEG path: planar Y'CbCr in the JPEG's own subsampling, full range, with one
    /// decompressor for many frames.
    @Test(arguments: [ChromaSubsampling.yuv420, .yuv422])
    func planarDecodeKeepsTheSubsamplingAndThePicture(subsampling: ChromaSubsampling) throws {
        var image = YUVImage(width: 64, height: 48, subsampling: subsampling)
        image.fill(x: 0, y: 0, width: 32, height: 48, luma: 235, cb: 128, cr: 128)
        let jpeg = try JPEGEncoder(quality: 95).encode(image)
        let decoder = try JPEGDecoder.PlanarDecoder()
        for _ in 0..<2 {
            let decoded = try decoder.decode(jpeg)
            #expect(decoded.width == 64 && decoded.height == 48 && decoded.subsampling == subsampling)
            #expect(decoded.isFullRange)
            // Limited-range white and black come back as JFIF's full range.
            #expect(decoded.luma(x: 8, y: 8) > 245 && decoded.luma(x: 56, y: 8) < 10)
        }
        #expect(throws: JPEGError.self) { try decoder.decode([0xFF, 0xD8, 0xFF]) }
        #expect(try JPEGDecoder.decodeYUV(jpeg).bytes == decoder.decode(jpeg).bytes)
    }
}
