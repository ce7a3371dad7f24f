import Testing

@testable import ShutterCamera

@Suite struct BitmapFontTests {
    /// The luma of the box `BitmapFont.draw` covers for `text` at (2, 2).
    private func drawn(_ text: String, scale: Int = 2, background: UInt8? = 16) -> [UInt8] {
        var image = YUVImage(width: 96, height: 32, subsampling: .yuv420)
        BitmapFont.draw(text, into: &image, x: 2, y: 2, scale: scale, background: background)
        let box = BitmapFont.size(of: text, scale: scale)
        var luma: [UInt8] = []
        for y in 2..<2 + box.height {
            for x in 2..<2 + box.width { luma.append(image.luma(x: x, y: y)) }
        }
        return luma
    }

    @Test func drawsGlyphPixels() {
        let luma = drawn("8")
        let lit = luma.filter { $0 == 235 }.count
        // "8" has 17 pixels set in the 5x7 grid; each is a 2x2 block at scale 2.
        #expect(lit == 17 * 4)
        #expect(luma.allSatisfy { $0 == 235 || $0 == 16 })
    }

    @Test func differentDigitsDiffer() {
        #expect(drawn("8") != drawn("0"))
        #expect(drawn("1") != drawn("7"))
    }

    @Test func lowercaseIsDrawnAsUppercase() {
        #expect(drawn("abc xyz") == drawn("ABC XYZ"))
    }

    @Test func unknownCharactersAreBoxes() {
        #expect(drawn("~") == drawn("\u{00E9}"))
        #expect(drawn("~") != drawn(" "))
        #expect(drawn("~").filter { $0 == 235 }.count == 20 * 4)
    }

    @Test func everyPunctuationMarkHasItsOwnGlyph() {
        let box = drawn("~")
        for character in ":-./#_+()%" {
            #expect(drawn(String(character)) != box, "\(character) fell back to the box")
        }
    }

    @Test func backgroundFillsTheBoxAndNilLeavesIt() {
        var image = YUVImage(width: 64, height: 32, subsampling: .yuv420)
        image.fill(x: 0, y: 0, width: 64, height: 32, luma: 100, cb: 90, cr: 170)
        var transparent = image
        BitmapFont.draw(" ", into: &image, x: 0, y: 0, scale: 2, luma: 235, background: 20)
        #expect(image.luma(x: 1, y: 1) == 20)
        #expect(image.chroma(x: 1, y: 1) == (128, 128))
        BitmapFont.draw("-", into: &transparent, x: 0, y: 0, scale: 2, background: nil)
        #expect(transparent.luma(x: 1, y: 1) == 100)
        #expect(transparent.chroma(x: 1, y: 1) == (90, 170))
        // The bar of "-" is font row 3, columns 0...4: image rows 8...9 at scale 2 after the margin.
        #expect(transparent.luma(x: 4, y: 8) == 235)
        #expect(transparent.chroma(x: 4, y: 8) == (128, 128))
    }

    @Test func clipsAtTheEdges() {
        var image = YUVImage(width: 16, height: 16, subsampling: .yuv420)
        BitmapFont.draw("#000123 2026", into: &image, x: -7, y: 10, scale: 3)
        BitmapFont.draw("X", into: &image, x: 100, y: -100, scale: 1)
        #expect(image.bytes.count == YUVImage.byteCount(width: 16, height: 16, subsampling: .yuv420))
        #expect(image.luma(x: 0, y: 0) == 16)
    }

    @Test func sizeCountsCharactersAndMargin() {
        #expect(BitmapFont.size(of: "ab", scale: 3) == (width: (2 * 6 + 1) * 3, height: 9 * 3))
    }
}
