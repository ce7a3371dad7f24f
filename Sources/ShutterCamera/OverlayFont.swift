import CFreeType

/// The glyphs of the burned-in text at one pixel size: rasterised once each (anti-aliased
/// coverage, 0 to 255) and cached, from a font file through FreeType, or from the built-in
/// `BitmapFont` when no font file can be read.
///
/// Not Sendable: the cache and the FreeType face belong to whoever draws with it (the capture
/// thread, or the store path behind its lock).
public final class OverlayFont {
    /// One character's coverage bitmap and where it sits.
    public struct Glyph {
        /// Bitmap width and height in pixels.
        public let width: Int
        public let height: Int
        /// From the pen position to the bitmap's left edge.
        public let left: Int
        /// From the baseline up to the bitmap's top row.
        public let top: Int
        /// How far the pen moves after this character.
        public let advance: Int
        /// `width * height` coverage values, rows top to bottom.
        public let coverage: [UInt8]
    }

    /// Where the glyphs come from.
    public enum Source: Equatable, Sendable {
        /// A font file rendered by FreeType.
        case file(String)
        /// The built-in 5x7 font, scaled to the size.
        case builtIn
    }

    /// The default font: DejaVu Sans Mono from Debian's fonts-dejavu-core.
    public static let defaultPath = "/usr/share/fonts/truetype/dejavu/DejaVuSansMono.ttf"

    /// What was loaded.
    public let source: Source
    /// The text height asked for, in pixels.
    public let pixelSize: Int
    /// From one baseline to the next.
    public let lineHeight: Int
    /// From the top of a line to its baseline.
    public let ascent: Int
    private var library: FT_Library?
    private var face: FT_Face?
    private var cache: [Unicode.Scalar: Glyph] = [:]

    /// Glyphs `pixelSize` pixels high from the font at `path`, or from the built-in font when it
    /// cannot be read (then `loadError` says why, for the log line).
    public init(path: String, pixelSize: Int) {
        self.pixelSize = max(pixelSize, 6)
        var library: FT_Library?
        var face: FT_Face?
        var failure: String?
        if FT_Init_FreeType(&library) != 0 {
            failure = "FreeType could not start"
        } else if FT_New_Face(library, path, 0, &face) != 0 {
            failure = "FreeType cannot read \(path)"
        } else if FT_Set_Pixel_Sizes(face, 0, FT_UInt(self.pixelSize)) != 0 {
            failure = "\(path) has no size \(self.pixelSize)"
        }
        if let failure {
            if let face { FT_Done_Face(face) }
            if let library { FT_Done_FreeType(library) }
            self.library = nil
            self.face = nil
            source = .builtIn
            loadError = failure
            // The built-in font: 7 rows of glyph and 2 of margin, scaled to the size asked for.
            let scale = max(1, self.pixelSize / (BitmapFont.glyphHeight + 2))
            ascent = (BitmapFont.glyphHeight + 1) * scale
            lineHeight = (BitmapFont.glyphHeight + 2) * scale
            return
        }
        self.library = library
        self.face = face
        source = .file(path)
        loadError = nil
        // Size metrics are 26.6 fixed point (FreeType's FT_Size_Metrics).
        let metrics = face!.pointee.size.pointee.metrics
        ascent = Int((metrics.ascender + 63) >> 6)
        lineHeight = max(Int((metrics.height + 63) >> 6), self.pixelSize)
    }

    /// Why the font file was not used, or nil when it was.
    public let loadError: String?

    deinit {
        if let face { FT_Done_Face(face) }
        if let library { FT_Done_FreeType(library) }
    }

    /// The glyph of `scalar`, rasterised on first use.
    public func glyph(_ scalar: Unicode.Scalar) -> Glyph {
        if let cached = cache[scalar] { return cached }
        let made = (face.flatMap { render(scalar, face: $0) }) ?? builtIn(scalar)
        cache[scalar] = made
        return made
    }

    /// The pen advance of `text`, in pixels.
    public func width(of text: String) -> Int {
        text.unicodeScalars.reduce(0) { $0 + glyph($1).advance }
    }

    /// How many glyphs are cached (each is rasterised once).
    public var cachedGlyphs: Int { cache.count }

    private func render(_ scalar: Unicode.Scalar, face: FT_Face) -> Glyph? {
        guard FT_Load_Char(face, FT_ULong(scalar.value), cshutter_ft_load_render()) == 0 else { return nil }
        let slot = face.pointee.glyph.pointee
        let bitmap = slot.bitmap
        let width = Int(bitmap.width)
        let height = Int(bitmap.rows)
        var coverage = [UInt8](repeating: 0, count: width * height)
        // FT_PIXEL_MODE_GRAY: one byte a pixel, `pitch` bytes a row (negative when bottom-up).
        if let buffer = bitmap.buffer, width > 0, height > 0,
            bitmap.pixel_mode == UInt8(FT_PIXEL_MODE_GRAY.rawValue)
        {
            for row in 0..<height {
                let start = buffer + row * Int(bitmap.pitch)
                for column in 0..<width { coverage[row * width + column] = start[column] }
            }
        }
        return Glyph(
            width: width, height: height, left: Int(slot.bitmap_left), top: Int(slot.bitmap_top),
            advance: Int((slot.advance.x + 32) >> 6), coverage: coverage)
    }

    /// The built-in font's glyph, scaled to the size, fully covered where its bits are set.
    private func builtIn(_ scalar: Unicode.Scalar) -> Glyph {
        let scale = max(1, pixelSize / (BitmapFont.glyphHeight + 2))
        let rows = BitmapFont.glyph(for: scalar)
        let width = BitmapFont.glyphWidth * scale
        let height = BitmapFont.glyphHeight * scale
        var coverage = [UInt8](repeating: 0, count: width * height)
        if scalar != " " {
            for y in 0..<height {
                let bits = rows[rows.startIndex + y / scale]
                for x in 0..<width where bits & (0x10 >> (x / scale)) != 0 { coverage[y * width + x] = 255 }
            }
        }
        return Glyph(
            width: width, height: height, left: scale, top: height, advance: BitmapFont.advance * scale,
            coverage: coverage)
    }
}
