import Testing

@testable import ShutterCamera

@Suite struct MJPEGRepairTests {
    /// A real JPEG of the test pattern, as TurboJPEG writes it (with its own DHT segments).
    static func patternJPEG(width: Int = 64, height: Int = 48) throws -> [UInt8] {
        let source = TestPatternSource(mode: CameraMode(width: width, height: height, fps: 30), paced: false)
        try source.start()
        guard case .yuv(let image) = try source.nextFrame().image else {
            throw CameraError.unsupported("expected a YUV frame")
        }
        return try JPEGEncoder(quality: 85).encode(image)
    }

    /// `jpeg` with every DHT segment before SOS removed, and the removed segments' payloads in order.
    static func strippingHuffmanTables(_ jpeg: [UInt8]) -> (stripped: [UInt8], payloads: [UInt8]) {
        var stripped: [UInt8] = [0xFF, 0xD8]
        var payloads: [UInt8] = []
        var offset = 2
        while jpeg[offset + 1] != 0xDA {
            let length = Int(jpeg[offset + 2]) << 8 | Int(jpeg[offset + 3])
            let segment = jpeg[offset..<(offset + 2 + length)]
            if jpeg[offset + 1] == 0xC4 {
                payloads += segment.dropFirst(4)
            } else {
                stripped += segment
            }
            offset += 2 + length
        }
        return (stripped + jpeg[offset...], payloads)
    }

    @Test func repairedFrameDecodesToTheOriginalPixels() throws {
        let original = try Self.patternJPEG()
        let (stripped, _) = Self.strippingHuffmanTables(original)
        #expect(stripped.count < original.count)
        let strippedLayout = try MJPEGRepair.validate(stripped).get()
        #expect(!strippedLayout.hasHuffmanTables)

        let repaired = try MJPEGRepair.insertingStandardHuffmanTables(stripped)
        #expect(repaired.count == stripped.count + MJPEGRepair.standardHuffmanTableSegment.count)
        #expect(try MJPEGRepair.validate(repaired).get().hasHuffmanTables)
        let expected = try JPEGDecoder.decodeRGB(original)
        let decoded = try JPEGDecoder.decodeRGB(repaired)
        #expect(decoded.width == 64 && decoded.height == 48)
        #expect(decoded.pixels == expected.pixels)
    }

    @Test func insertedTablesAreTheOnesLibjpegWritesByDefault() throws {
        // TurboJPEG without optimisation writes the Annex K tables, DC then AC, luma then chroma.
        let (_, payloads) = Self.strippingHuffmanTables(try Self.patternJPEG())
        let segment = MJPEGRepair.standardHuffmanTableSegment
        #expect(Array(segment.dropFirst(4)) == payloads)
        #expect(segment.count == 420)
        #expect(segment.prefix(4) == [0xFF, 0xC4, 0x01, 0xA2])
    }

    @Test func tablesGoRightBeforeTheScan() throws {
        let (stripped, _) = Self.strippingHuffmanTables(try Self.patternJPEG())
        let scan = try MJPEGRepair.validate(stripped).get().startOfScan
        #expect(stripped[scan] == 0xFF && stripped[scan + 1] == 0xDA)
        let repaired = try MJPEGRepair.insertingStandardHuffmanTables(stripped)
        #expect(Array(repaired[..<scan]) == Array(stripped[..<scan]))
        #expect(repaired[scan] == 0xFF && repaired[scan + 1] == 0xC4)
        #expect(Array(repaired[(scan + 420)...]) == Array(stripped[scan...]))
    }

    @Test func frameWithTablesIsOnlyCutAfterItsEnd() throws {
        let original = try Self.patternJPEG()
        #expect(try MJPEGRepair.insertingStandardHuffmanTables(original) == original)
        let padded = original + [UInt8](repeating: 0, count: 4096)
        #expect(try MJPEGRepair.insertingStandardHuffmanTables(padded) == original)
    }

    @Test func paddingAfterEndOfImageIsAccepted() throws {
        let original = try Self.patternJPEG()
        for padding in [[UInt8](repeating: 0, count: 1000), [0xFF, 0xFF, 0x00], [0xAB]] {
            let layout = try MJPEGRepair.validate(original + padding).get()
            #expect(layout.length == original.count)
            #expect(layout.size == FrameSize(width: 64, height: 48))
            #expect(layout.hasHuffmanTables)
        }
    }

    @Test func truncatedFrameIsRejected() throws {
        let original = try Self.patternJPEG()
        let scan = try MJPEGRepair.validate(original).get().startOfScan
        let cut = Array(original[..<(scan + (original.count - scan) / 2)])
        #expect(MJPEGRepair.validate(cut) == .failure(.missingEndOfImage))
        // Cut inside the headers: the segment lengths run past the end.
        guard case .failure(.malformedSegment(let offset)) = MJPEGRepair.validate(Array(original[..<200]))
        else {
            Issue.record("a frame cut inside its headers must be a malformed segment")
            return
        }
        #expect(offset > 2 && offset < 200)
    }

    @Test func garbageAndShortFramesAreRejected() throws {
        var generator = SystemRandomNumberGenerator()
        let garbage = (0..<500).map { _ in UInt8.random(in: 1...0xFE, using: &generator) }
        #expect(MJPEGRepair.validate(garbage) == .failure(.missingStartOfImage))
        #expect(MJPEGRepair.validate([0xFF, 0xD8, 0xFF, 0xD9]) == .failure(.tooShort(4)))
        #expect(MJPEGRepair.validate([]) == .failure(.tooShort(0)))
        // Long enough to look at, but the whole picture ends before 128 bytes.
        let tiny: [UInt8] = [0xFF, 0xD8, 0xFF, 0xDA, 0x00, 0x02, 0x11, 0xFF, 0xD9]
        #expect(MJPEGRepair.validate(tiny + [UInt8](repeating: 0, count: 200)) == .failure(.tooShort(9)))
        #expect(throws: MJPEGRepair.Defect.missingStartOfImage) {
            try MJPEGRepair.insertingStandardHuffmanTables(garbage)
        }
    }

    @Test func malformedHeadersAreRejected() {
        let filler = [UInt8](repeating: 0, count: 200)
        // Not a marker after SOI.
        #expect(MJPEGRepair.validate([0xFF, 0xD8, 0x12] + filler) == .failure(.malformedSegment(offset: 2)))
        // EOI before any scan.
        #expect(
            MJPEGRepair.validate([0xFF, 0xD8, 0xFF, 0xD9] + filler) == .failure(.malformedSegment(offset: 2)))
        // A length of 1 is impossible (it counts its own two bytes).
        #expect(
            MJPEGRepair.validate([0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x01] + filler)
                == .failure(.malformedSegment(offset: 2)))
        // Headers that run to the end without SOS: fill bytes until the end.
        let noScan: [UInt8] =
            [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0, 0] + [UInt8](repeating: 0xFF, count: 200)
        #expect(MJPEGRepair.validate(noScan) == .failure(.missingStartOfScan))
    }

    @Test func aFrameHeaderWithNoWidthOrNoHeightIsRejected() throws {
        // Found by fuzz/FuzzMJPEGRepair: a SOF0 of 0x48 passed, and the frame went on as a
        // picture of width 0. T.81 B.2.2 allows no zero width, and a zero height (left to a DNL
        // segment) is what libjpeg refuses to decode.
        let original = try Self.patternJPEG()
        let frameHeader = try #require(
            original.indices.first { original[$0] == 0xFF && original[$0 + 1] == 0xC0 })
        for (field, name) in [(frameHeader + 7, "width"), (frameHeader + 5, "height")] {
            var zeroed = original
            zeroed[field] = 0
            zeroed[field + 1] = 0
            #expect(
                MJPEGRepair.validate(zeroed) == .failure(.malformedSegment(offset: frameHeader)), "\(name) 0")
        }
        #expect(try MJPEGRepair.validate(original).get().size == FrameSize(width: 64, height: 48))
    }

    @Test func fillBytesBeforeAMarkerAreAllowed() throws {
        let original = try Self.patternJPEG()
        // T.81 B.1.1.2: any number of 0xFF may precede a marker.
        let filled = [0xFF, 0xD8, 0xFF, 0xFF, 0xFF] + original.dropFirst(3)
        let layout = try MJPEGRepair.validate(filled).get()
        #expect(layout.length == filled.count)
        #expect(try JPEGDecoder.decodeRGB(filled).pixels == JPEGDecoder.decodeRGB(original).pixels)
    }

    @Test func defectsDescribeThemselves() {
        #expect(MJPEGRepair.Defect.tooShort(4).description == "only 4 bytes")
        #expect(MJPEGRepair.Defect.missingEndOfImage.description.contains("truncated"))
    }
}
