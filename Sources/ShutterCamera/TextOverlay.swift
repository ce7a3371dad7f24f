/// Draws the burned-in text into a planar Y'CbCr image before it is encoded: the glyphs'
/// coverage blended into the Y plane (and the chroma planes, for a colour), over a
/// semi-transparent box, with no RGB round trip.
///
/// Not Sendable: it owns an `OverlayFont` and its glyph cache.
public final class TextOverlay {
    /// Where the text goes.
    public enum Position: String, Sendable, CaseIterable {
        case topLeft = "top-left"
        case topRight = "top-right"
        case bottomLeft = "bottom-left"
        case bottomRight = "bottom-right"
        case top, bottom
    }

    /// How the text looks: all of it from the configuration.
    public struct Style: Sendable, Equatable {
        /// Where the box goes.
        public var position: Position
        /// Text height in pixels; 0 scales it with the picture (a 30th of its height, at least 10).
        public var pixelSize: Int
        /// The text's colour, as RGB.
        public var color: RGB
        /// The box's colour, as RGB.
        public var boxColor: RGB
        /// How much the box hides what is behind it, 0 (no box) to 255 (opaque).
        public var boxOpacity: Int
        /// The font file (FreeType); the built-in font when it cannot be read.
        public var fontPath: String

        /// The defaults: white DejaVu Sans Mono a 30th of the picture high, bottom-left, on a black
        /// box of opacity 160.
        public init(
            position: Position = .bottomLeft, pixelSize: Int = 0, color: RGB = .white, boxColor: RGB = .black,
            boxOpacity: Int = 160, fontPath: String = OverlayFont.defaultPath
        ) {
            self.position = position
            self.pixelSize = pixelSize
            self.color = color
            self.boxColor = boxColor
            self.boxOpacity = boxOpacity
            self.fontPath = fontPath
        }

        /// The text height for a picture `height` pixels high.
        public func textHeight(forPictureHeight height: Int) -> Int {
            pixelSize > 0 ? pixelSize : max(10, height / 30)
        }
    }

    /// An sRGB colour, parsed from `#RRGGBB` or `RRGGBB`.
    public struct RGB: Sendable, Equatable, CustomStringConvertible {
        /// The channels, 0 to 255.
        public var red: UInt8
        public var green: UInt8
        public var blue: UInt8

        /// `#ffffff`.
        public static let white = RGB(red: 255, green: 255, blue: 255)
        /// `#000000`.
        public static let black = RGB(red: 0, green: 0, blue: 0)

        /// A colour from its channels.
        public init(red: UInt8, green: UInt8, blue: UInt8) {
            self.red = red
            self.green = green
            self.blue = blue
        }

        /// Nil unless `text` is six hex digits, with or without a leading `#`.
        public init?(hex text: String) {
            let digits = text.hasPrefix("#") ? String(text.dropFirst()) : text
            guard digits.count == 6, let value = UInt32(digits, radix: 16) else { return nil }
            self.init(red: UInt8(value >> 16), green: UInt8(value >> 8 & 0xFF), blue: UInt8(value & 0xFF))
        }

        /// `#rrggbb`.
        public var description: String {
            let digits = Array("0123456789abcdef")
            return "#"
                + [red, green, blue].map { "\(digits[Int($0 >> 4)])\(digits[Int($0 & 0xF)])" }.joined()
        }

        /// BT.601 Y'CbCr (ITU-R BT.601 §2.5.4): limited range (16...235, 16...240) or JFIF's full range.
        func ycbcr(fullRange: Bool) -> (y: UInt8, cb: UInt8, cr: UInt8) {
            let r = Double(red)
            let g = Double(green)
            let b = Double(blue)
            let luma = 0.299 * r + 0.587 * g + 0.114 * b
            let cb = (b - luma) / 1.772
            let cr = (r - luma) / 1.402
            func clamp(_ value: Double) -> UInt8 { UInt8(max(0, min(255, value.rounded()))) }
            if fullRange { return (clamp(luma), clamp(128 + cb), clamp(128 + cr)) }
            return (clamp(16 + luma * 219 / 255), clamp(128 + cb * 224 / 255), clamp(128 + cr * 224 / 255))
        }
    }

    /// The style drawn with.
    public let style: Style
    /// The font, made for the first picture height seen (the camera's size does not change often).
    public private(set) var font: OverlayFont?
    /// Called once with the reason when the font file cannot be read and the built-in font is used.
    private let fontFallback: (String) -> Void

    /// A renderer for `style`; `fontFallback` hears why the font file was not used, once.
    public init(style: Style, fontFallback: @escaping (String) -> Void = { _ in }) {
        self.style = style
        self.fontFallback = fontFallback
    }

    /// The font for a picture `height` pixels high, made (and its glyph cache emptied) only when
    /// the size changes.
    func font(forPictureHeight height: Int) -> OverlayFont {
        let size = style.textHeight(forPictureHeight: height)
        if let font, font.pixelSize == max(size, 6) { return font }
        let made = OverlayFont(path: style.fontPath, pixelSize: size)
        if let reason = made.loadError, font == nil { fontFallback(reason) }
        font = made
        return made
    }

    /// The box the text takes in a `width` x `height` picture: x, y, width, height.
    public func box(for lines: [String], width: Int, height: Int) -> (x: Int, y: Int, width: Int, height: Int)
    {
        let font = font(forPictureHeight: height)
        let padding = max(2, font.pixelSize / 4)
        let boxWidth = min(width, (lines.map { font.width(of: $0) }.max() ?? 0) + 2 * padding)
        let boxHeight = min(height, lines.count * font.lineHeight + 2 * padding)
        let margin = max(2, font.pixelSize / 3)
        let left = margin
        let right = max(0, width - margin - boxWidth)
        let center = max(0, (width - boxWidth) / 2)
        let top = margin
        let bottom = max(0, height - margin - boxHeight)
        let (x, y): (Int, Int) =
            switch style.position {
            case .topLeft: (left, top)
            case .topRight: (right, top)
            case .bottomLeft: (left, bottom)
            case .bottomRight: (right, bottom)
            case .top: (center, top)
            case .bottom: (center, bottom)
            }
        return (x, y, boxWidth, boxHeight)
    }

    /// Draws `lines` into `image`: the box, then each glyph's coverage; clipped to the image.
    public func draw(_ lines: [String], into image: inout YUVImage) {
        guard !lines.isEmpty else { return }
        let g = image.geometry
        let fullRange = image.isFullRange
        image.bytes.withUnsafeMutableBufferPointer { buffer in
            draw(lines, planes: buffer.baseAddress!, geometry: g, fullRange: fullRange)
        }
    }

    /// Draws `lines` into full-range planes laid out as `image`'s (what `JPEGEncoder.encode(_:drawing:)`
    /// hands over), without touching `image` itself.
    public func draw(_ lines: [String], intoPlanes planes: UnsafeMutablePointer<UInt8>, of image: YUVImage) {
        guard !lines.isEmpty else { return }
        draw(lines, planes: planes, geometry: image.geometry, fullRange: true)
    }

    private func draw(
        _ lines: [String], planes base: UnsafeMutablePointer<UInt8>, geometry g: YUVImage.Geometry,
        fullRange: Bool
    ) {
        let font = font(forPictureHeight: g.height)
        let box = box(for: lines, width: g.width, height: g.height)
        let padding = max(2, font.pixelSize / 4)
        let text = style.color.ycbcr(fullRange: fullRange)
        let boxColor = style.boxColor.ycbcr(fullRange: fullRange)
        let opacity = max(0, min(255, style.boxOpacity))
        // Grey text on a grey box leaves the chroma alone: the common case touches only Y.
        let neutral =
            Int(text.cb) == 128 && Int(text.cr) == 128
            && (opacity == 0 || (boxColor.cb == 128 && boxColor.cr == 128))
        do {
            if opacity > 0 {
                Self.blendRectangle(
                    base, g, x: box.x, y: box.y, width: box.width, height: box.height, color: boxColor,
                    alpha: opacity, chroma: !neutral)
            }
            var baseline = box.y + padding + font.ascent
            for line in lines {
                var pen = box.x + padding
                for scalar in line.unicodeScalars {
                    let glyph = font.glyph(scalar)
                    Self.blendGlyph(
                        base, g, glyph, x: pen + glyph.left, y: baseline - glyph.top, color: text,
                        chroma: !neutral)
                    pen += glyph.advance
                }
                baseline += font.lineHeight
            }
        }
    }

    /// `value` moved toward `target` by `alpha`/255, rounded.
    @inline(__always)
    static func blend(_ value: UInt8, _ target: UInt8, _ alpha: Int) -> UInt8 {
        UInt8(truncatingIfNeeded: (Int(value) * (255 - alpha) + Int(target) * alpha + 127) / 255)
    }

    static func blendRectangle(
        _ base: UnsafeMutablePointer<UInt8>, _ g: YUVImage.Geometry, x: Int, y: Int, width: Int, height: Int,
        color: (y: UInt8, cb: UInt8, cr: UInt8), alpha: Int, chroma: Bool
    ) {
        let x0 = max(0, x)
        let y0 = max(0, y)
        let x1 = min(g.width, x + width)
        let y1 = min(g.height, y + height)
        guard x0 < x1, y0 < y1 else { return }
        for row in y0..<y1 {
            let line = base + row * g.width
            for column in x0..<x1 { line[column] = blend(line[column], color.y, alpha) }
        }
        guard chroma else { return }
        for row in (y0 >> g.verticalShift)...((y1 - 1) >> g.verticalShift) {
            for column in (x0 >> 1)...((x1 - 1) >> 1) {
                let index = row * g.chromaWidth + column
                base[g.cbOffset + index] = blend(base[g.cbOffset + index], color.cb, alpha)
                base[g.crOffset + index] = blend(base[g.crOffset + index], color.cr, alpha)
            }
        }
    }

    static func blendGlyph(
        _ base: UnsafeMutablePointer<UInt8>, _ g: YUVImage.Geometry, _ glyph: OverlayFont.Glyph, x: Int,
        y: Int,
        color: (y: UInt8, cb: UInt8, cr: UInt8), chroma: Bool
    ) {
        guard glyph.width > 0, glyph.height > 0 else { return }
        let x0 = max(0, x)
        let y0 = max(0, y)
        let x1 = min(g.width, x + glyph.width)
        let y1 = min(g.height, y + glyph.height)
        guard x0 < x1, y0 < y1 else { return }
        glyph.coverage.withUnsafeBufferPointer { coverage in
            for row in y0..<y1 {
                let line = base + row * g.width
                let source = (row - y) * glyph.width - x
                for column in x0..<x1 {
                    let alpha = Int(coverage[source + column])
                    if alpha == 0 { continue }
                    line[column] = blend(line[column], color.y, alpha)
                    // Each chroma sample is blended once, by the coverage of the pixel at its
                    // top-left, so a cell is not tinted two or four times over.
                    if chroma, column & 1 == 0, row & ((1 << g.verticalShift) - 1) == 0 {
                        let index = (row >> g.verticalShift) * g.chromaWidth + (column >> 1)
                        base[g.cbOffset + index] = blend(base[g.cbOffset + index], color.cb, alpha)
                        base[g.crOffset + index] = blend(base[g.crOffset + index], color.cr, alpha)
                    }
                }
            }
        }
    }
}
