import Testing

@testable import ShutterCamera

/// The EXIF block byte by byte, against a layout worked out by hand from TIFF 6.0 and Exif 2.32.
struct EXIFBlockTests {
    static let block = EXIFBlock(
        takenAtMilliseconds: 1_700_000_000_123, utcOffsetSeconds: 3600, make: "uvcvideo", model: "Cam",
        software: "shutterd 1.0", imageDescription: "door")

    /// Hex with spaces and line breaks ignored.
    static func bytes(_ hex: String) -> [UInt8] {
        let digits = Array(hex.filter(\.isHexDigit))
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(digits[$0...$0 + 1]), radix: 16)! }
    }

    @Test func theSegmentIsExactlyTheHandWrittenOne() {
        let expected =
            Self.bytes("FFE1 00CE") + Array("Exif".utf8) + [0, 0]
            + Self.bytes(
                """
                4949 2A00 08000000
                0600
                0E01 0200 05000000 56000000
                0F01 0200 09000000 5C000000
                1001 0200 04000000 43616D00
                1201 0300 01000000 01000000
                3101 0200 0D000000 66000000
                6987 0400 01000000 74000000
                00000000
                """) + Array("door".utf8) + [0, 0] + Array("uvcvideo".utf8) + [0, 0]
            + Array("shutterd 1.0".utf8) + [0, 0]
            + Self.bytes(
                """
                0400
                0090 0700 04000000 30323332
                0390 0200 14000000 AA000000
                1190 0200 07000000 BE000000
                9192 0200 04000000 31323300
                00000000
                """) + Array("2023:11:14 23:13:20".utf8) + [0] + Array("+01:00".utf8) + [0, 0]
        #expect(Self.block.segment == expected)
    }

    @Test func timesBeforeTheEpochAndWestOfGreenwichAreWrittenAsLocalTime() {
        var block = Self.block
        block.takenAtMilliseconds = -1
        block.utcOffsetSeconds = -19800
        #expect(block.dateTimeOriginal == "1969:12:31 18:29:59")
        #expect(block.subSecTimeOriginal == "999")
        #expect(block.offsetTimeOriginal == "-05:30")
    }

    @Test func withoutADescriptionTheTagIsLeftOutAndNULsAreDropped() {
        var block = Self.block
        block.imageDescription = nil
        block.model = "A\u{0}B"
        let tiff = block.tiffStructure
        #expect(tiff[8...9] == [5, 0])
        #expect(tiff[10...11] == [0x0F, 0x01])
        // Model "AB\0" fits in its entry.
        #expect(tiff[22...33] == [0x10, 0x01, 2, 0, 3, 0, 0, 0, 0x41, 0x42, 0, 0])
    }

    @Test func insertionPutsTheSegmentAfterSOIAndKeepsEveryOtherByte() {
        let jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x4A, 0x46, 0xFF, 0xDA, 1, 2, 3, 0xFF, 0xD9]
        let stored = Self.block.inserted(into: jpeg)
        let segment = Self.block.segment
        #expect(Array(stored[..<2]) == [0xFF, 0xD8])
        #expect(Array(stored[2..<(2 + segment.count)]) == segment)
        #expect(Array(stored[(2 + segment.count)...]) == Array(jpeg[2...]))
        #expect(Self.block.inserted(into: [1, 2, 3]) == [1, 2, 3])
    }
}
