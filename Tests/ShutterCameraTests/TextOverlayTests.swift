import Testing

@testable import ShutterCamera

/// The burned-in text drawn into Y'CbCr planes: only its box changes, glyphs are rasterised once,
/// and a missing font falls back to the built-in one.
struct TextOverlayTests {
    static func grey(width: Int = 320, height: Int = 240, subsampling: ChromaSubsampling = .yuv420)
        -> YUVImage
    {
        var image = YUVImage(width: width, height: height, subsampling: subsampling)
        image.fill(x: 0, y: 0, width: width, height: height, luma: 120, cb: 128, cr: 128)
        return image
    }

    /// Whether every luma sample outside the rectangle is unchanged, and how many inside changed.
    static func compare(_ before: YUVImage, _ after: YUVImage, box: (x: Int, y: Int, width: Int, height: Int))
        -> (outsideUnchanged: Bool, changedInside: Int)
    {
        var outsideUnchanged = true
        var changedInside = 0
        for y in 0..<before.height {
            for x in 0..<before.width {
                let inside = x >= box.x && x < box.x + box.width && y >= box.y && y < box.y + box.height
                let changed = before.luma(x: x, y: y) != after.luma(x: x, y: y)
                if inside, changed { changedInside += 1 }
                if !inside, changed { outsideUnchanged = false }
            }
        }
        return (outsideUnchanged, changedInside)
    }

    @Test(arguments: TextOverlay.Position.allCases)
    func onlyTheBoxInTheChosenPlaceChanges(position: TextOverlay.Position) throws {
        let overlay = TextOverlay(style: .init(position: position, pixelSize: 16))
        let before = Self.grey()
        var after = before
        overlay.draw(["12:34:56", "front door"], into: &after)
        #expect(overlay.font?.source == .file(OverlayFont.defaultPath))
        let box = overlay.box(for: ["12:34:56", "front door"], width: 320, height: 240)
        let result = Self.compare(before, after, box: box)
        #expect(result.outsideUnchanged)
        #expect(result.changedInside > box.width * box.height / 2)
        // Left, right or centred; top or bottom.
        switch position {
        case .topLeft, .bottomLeft: #expect(box.x < 20)
        case .topRight, .bottomRight: #expect(box.x + box.width > 300)
        case .top, .bottom: #expect(abs((box.x + box.width / 2) - 160) <= 1)
        }
        #expect(position.rawValue.hasPrefix("top") ? box.y < 20 : box.y + box.height > 220)
        // White text on a grey box touches no chroma sample.
        #expect(after.bytes[after.cbOffset...] == before.bytes[before.cbOffset...])
    }

    @Test func textIsBrighterThanItsBoxAndColourReachesTheChroma() {
        let style = TextOverlay.Style(pixelSize: 20, color: TextOverlay.RGB(hex: "#ff0000")!, boxOpacity: 255)
        let overlay = TextOverlay(style: style)
        var image = Self.grey(subsampling: .yuv422)
        overlay.draw(["WWWW"], into: &image)
        let box = overlay.box(for: ["WWWW"], width: 320, height: 240)
        var lumas: [UInt8] = []
        var crs: [UInt8] = []
        for y in box.y..<(box.y + box.height) {
            for x in box.x..<(box.x + box.width) {
                lumas.append(image.luma(x: x, y: y))
                crs.append(image.chroma(x: x, y: y).cr)
            }
        }
        // An opaque black box: limited-range black, with red text somewhere on it.
        #expect(lumas.min() == 16)
        #expect(lumas.max()! > 60)
        #expect(crs.max()! > 200)
    }

    @Test func glyphsAreRasterisedOnceEach() {
        let overlay = TextOverlay(style: .init(pixelSize: 16))
        var image = Self.grey()
        overlay.draw(["00:00:00"], into: &image)
        let cached = overlay.font?.cachedGlyphs
        overlay.draw(["00:00:00", "0:0"], into: &image)
        #expect(cached == 2)
        #expect(overlay.font?.cachedGlyphs == 2)
    }

    @Test func aMissingFontFallsBackToTheBuiltInOneAndSaysSoOnce() {
        var reasons: [String] = []
        let overlay = TextOverlay(style: .init(pixelSize: 18, fontPath: "/nonexistent/font.ttf")) {
            reasons.append($0)
        }
        let before = Self.grey()
        var after = before
        overlay.draw(["12:00"], into: &after)
        overlay.draw(["12:01"], into: &after)
        #expect(overlay.font?.source == .builtIn)
        #expect(reasons.count == 1 && reasons[0].contains("/nonexistent/font.ttf"))
        let box = overlay.box(for: ["12:00"], width: 320, height: 240)
        #expect(Self.compare(before, after, box: box).outsideUnchanged)
    }

    /// The capture loop draws in the encoder's buffer: the same JPEG as drawing on a copy, and
    /// the frame (which its camera still holds) untouched.
    @Test func drawingInTheEncodersBufferMatchesDrawingOnACopy() throws {
        var frame = Self.grey(subsampling: .yuv422)
        frame.isFullRange = true
        let original = frame.bytes
        let overlay = TextOverlay(style: .init(pixelSize: 16, color: TextOverlay.RGB(hex: "#ffcc00")!))
        let encoder = try JPEGEncoder(quality: 90)
        var copy = frame
        overlay.draw(["12:34:56.789"], into: &copy)
        let expected = try encoder.encode(copy)
        let drawn = try encoder.encode(frame) { overlay.draw(["12:34:56.789"], intoPlanes: $0, of: frame) }
        #expect(drawn == expected)
        #expect(frame.bytes == original)
        #expect(try encoder.encode(frame) != drawn)
    }

    @Test func coloursConvertToBT601() {
        #expect(TextOverlay.RGB.white.ycbcr(fullRange: false) == (235, 128, 128))
        #expect(TextOverlay.RGB.black.ycbcr(fullRange: false) == (16, 128, 128))
        #expect(TextOverlay.RGB.white.ycbcr(fullRange: true) == (255, 128, 128))
        #expect(TextOverlay.RGB(hex: "00ff00")!.description == "#00ff00")
        #expect(TextOverlay.RGB(hex: "#12345") == nil)
    }
}
