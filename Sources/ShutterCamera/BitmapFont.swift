/// A built-in 5x7 pixel font for stamping text into frames, with no font files or rasteriser.
///
/// Covers digits, A-Z (lowercase is drawn as uppercase), space and `:-./#_+()%`;
/// any other character is drawn as a box.
public enum BitmapFont {
    /// Glyph width in font pixels.
    public static let glyphWidth = 5
    /// Glyph height in font pixels.
    public static let glyphHeight = 7
    /// Distance from one character to the next, in font pixels (one blank column between).
    public static let advance = 6

    /// Size in image pixels of the box `draw` covers: the glyphs plus a one-font-pixel margin all round.
    public static func size(of text: String, scale: Int) -> (width: Int, height: Int) {
        let scale = max(scale, 1)
        let count = text.unicodeScalars.count
        return ((count * advance + 1) * scale, (glyphHeight + 2) * scale)
    }

    /// Draws text into the luma plane (and neutral chroma) of `image`, with its box's top-left at (x, y).
    ///
    /// Each font pixel becomes a `scale` x `scale` block of `luma`; the box behind the text is
    /// filled with `background` unless it is nil. Everything drawn gets neutral chroma, so the
    /// text is grey or white whatever it lies on. Drawing is clipped to the image.
    public static func draw(
        _ text: String, into image: inout YUVImage, x: Int, y: Int, scale: Int, luma: UInt8 = 235,
        background: UInt8? = 16
    ) {
        let scale = max(scale, 1)
        let neutral = YUVImage.neutralChroma
        let g = image.geometry
        let box = size(of: text, scale: scale)
        image.bytes.withUnsafeMutableBufferPointer { buffer in
            let base = buffer.baseAddress!
            if let background {
                g.fill(
                    base, x: x, y: y, width: box.width, height: box.height, luma: background, cb: neutral,
                    cr: neutral)
            }
            var originX = x + scale
            let originY = y + scale
            for scalar in text.unicodeScalars {
                let rows = glyph(for: scalar)
                for row in 0..<glyphHeight {
                    let bits = rows[rows.startIndex + row]
                    var column = 0
                    // Fill each horizontal run of set bits as one rectangle.
                    while column < glyphWidth {
                        guard bits & (0x10 >> column) != 0 else {
                            column += 1
                            continue
                        }
                        let runStart = column
                        while column < glyphWidth && bits & (0x10 >> column) != 0 { column += 1 }
                        g.fill(
                            base, x: originX + runStart * scale, y: originY + row * scale,
                            width: (column - runStart) * scale, height: scale, luma: luma, cb: neutral,
                            cr: neutral)
                    }
                }
                originX += advance * scale
            }
        }
    }

    /// The seven row bitmaps of `scalar`'s glyph, leftmost pixel in bit 4.
    static func glyph(for scalar: Unicode.Scalar) -> ArraySlice<UInt8> {
        var value = scalar.value
        if value >= 0x61 && value <= 0x7A { value -= 0x20 }
        let index = value < 128 ? Int(glyphIndex[Int(value)]) : boxIndex
        return glyphRows[index * glyphHeight..<(index + 1) * glyphHeight]
    }

    /// The characters of `glyphRows`, in order; the box comes last.
    private static let characters = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ :-./#_+()%".unicodeScalars)
    private static let boxIndex = characters.count

    /// ASCII code to glyph number, `boxIndex` for characters the font lacks.
    private static let glyphIndex: [Int16] = {
        var index = [Int16](repeating: Int16(boxIndex), count: 128)
        for (number, scalar) in characters.enumerated() { index[Int(scalar.value)] = Int16(number) }
        return index
    }()

    // The classic 5x7 dot-matrix shapes (as in HD44780 character LCDs), seven rows per glyph.
    private static let glyphRows: [UInt8] = [
        0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E,  // 0
        0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E,  // 1
        0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F,  // 2
        0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E,  // 3
        0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02,  // 4
        0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E,  // 5
        0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E,  // 6
        0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08,  // 7
        0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E,  // 8
        0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C,  // 9
        0x0E, 0x11, 0x11, 0x11, 0x1F, 0x11, 0x11,  // A
        0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E,  // B
        0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E,  // C
        0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C,  // D
        0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F,  // E
        0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10,  // F
        0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F,  // G
        0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11,  // H
        0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E,  // I
        0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C,  // J
        0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11,  // K
        0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F,  // L
        0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11,  // M
        0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11,  // N
        0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E,  // O
        0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10,  // P
        0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D,  // Q
        0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11,  // R
        0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E,  // S
        0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04,  // T
        0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E,  // U
        0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04,  // V
        0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A,  // W
        0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11,  // X
        0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04,  // Y
        0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F,  // Z
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,  // space
        0x00, 0x0C, 0x0C, 0x00, 0x0C, 0x0C, 0x00,  // :
        0x00, 0x00, 0x00, 0x1F, 0x00, 0x00, 0x00,  // -
        0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C,  // .
        0x00, 0x01, 0x02, 0x04, 0x08, 0x10, 0x00,  // /
        0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A,  // #
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x1F,  // _
        0x00, 0x04, 0x04, 0x1F, 0x04, 0x04, 0x00,  // +
        0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02,  // (
        0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08,  // )
        0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03,  // %
        0x1F, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1F,  // box for anything else
    ]
}
