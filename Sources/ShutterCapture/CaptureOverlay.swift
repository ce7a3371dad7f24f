import ShutterCamera
import ShutterSystem

/// The burned-in text as the capture service applies it: what to write, how it looks, and on
/// which of the two targets (stored pictures, the live preview).
public struct CaptureOverlay: Sendable {
    /// The text, with its fields.
    public var template: OverlayTemplate
    /// How it looks and where it goes.
    public var style: TextOverlay.Style
    /// Times in UTC rather than local time.
    public var utc: Bool
    /// Drawn on stored pictures.
    public var onPictures: Bool
    /// Drawn on the live preview.
    public var onPreview: Bool

    /// An overlay drawn on the targets marked true.
    public init(
        template: OverlayTemplate, style: TextOverlay.Style, utc: Bool, onPictures: Bool, onPreview: Bool
    ) {
        self.template = template
        self.style = style
        self.utc = utc
        self.onPictures = onPictures
        self.onPreview = onPreview
    }

    /// Whether a stored picture must be made from the frame as captured rather than from the
    /// published (preview) JPEG: the preview's text must not be on it, or its own must be drawn
    /// (the preview has none, or the text names the picture's own label or job).
    var picturesNeedTheFrameAsCaptured: Bool {
        onPictures != onPreview || (onPictures && template.usesPictureFields)
    }

    /// Whether stored pictures are drawn at store time, with their own label and job.
    var picturesDrawTheirOwn: Bool { onPictures && picturesNeedTheFrameAsCaptured }
}

/// The renderer stored pictures are drawn with, shared by the requests that store them.
///
/// @unchecked Sendable: the renderer (and its glyph cache) is used only inside `withRenderer`,
/// with the lock held; it never leaves it.
final class PictureOverlayRenderer: @unchecked Sendable {
    private let renderer: LockedValue<TextOverlay>

    init(style: TextOverlay.Style, fontFallback: @escaping (String) -> Void) {
        renderer = LockedValue(TextOverlay(style: style, fontFallback: fontFallback))
    }

    func withRenderer<Result>(_ body: (TextOverlay) throws -> Result) rethrows -> Result {
        try renderer.withLock { try body($0) }
    }
}
