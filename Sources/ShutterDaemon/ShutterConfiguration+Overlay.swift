import ShutterCamera
import ShutterCapture

/// The `overlay_*` keys: the burned-in text, where it goes and how it looks.
public struct OverlaySettings: Sendable, Equatable {
    /// The text; empty (the default) for none.
    public var text = ""
    /// Whether stored pictures and the preview carry it.
    public var onPictures = true
    /// See `onPictures`.
    public var onPreview = true
    /// Times in UTC instead of local time.
    public var utc = false
    /// Position, size, colours, box and font.
    public var style = TextOverlay.Style()

    /// No text, both targets, local time, the default look.
    public init() {}

    /// The capture service's overlay, or nil when there is no text or no target.
    public var captureOverlay: CaptureOverlay? {
        guard let template = OverlayTemplate(text), onPictures || onPreview else { return nil }
        return CaptureOverlay(
            template: template, style: style, utc: utc, onPictures: onPictures, onPreview: onPreview)
    }
}

extension ShutterConfiguration {
    /// The orientation `rotate` and `flip` describe (both are checked when read).
    public var orientation: Orientation {
        Orientation(rotation: rotate, flip: flip) ?? .identity
    }
}

extension ConfigurationKey {
    /// What Shutter adds to the picture: its orientation (README, "Cameras").
    static let overlayKeys: [ConfigurationKey] = [
        ConfigurationKey(
            name: "rotate", valueName: "DEGREES",
            help:
                "turn pictures and the preview clockwise by 0, 90, 180 or 270 degrees (a camera mounted sideways or upside down); MJPEG is turned losslessly when its size is whole JPEG blocks",
            apply: { config, text in
                guard let degrees = Int(text), Orientation(rotation: degrees, flip: .none) != nil else {
                    throw ConfigurationError("rotate: '\(text)' is not one of 0, 90, 180, 270")
                }
                config.rotate = degrees
            },
            current: { String($0.rotate) }),
        ConfigurationKey(
            name: "flip", valueName: "MIRROR",
            help: "mirror pictures and the preview after the rotation: none, horizontal or vertical",
            apply: { config, text in
                guard let flip = Orientation.Flip(rawValue: text.lowercased()) else {
                    throw ConfigurationError("flip: '\(text)' is not one of none, horizontal, vertical")
                }
                config.flip = flip
            },
            current: { $0.flip.rawValue }),
        ConfigurationKey(
            name: "overlay_text", valueName: "TEXT",
            help:
                "text burned into the picture, empty for none; lines split by \\n; strftime fields (%Y-%m-%d %H:%M:%S %z ...), %f for milliseconds, {camera} {label} {frame} {job} {width} {height}",
            apply: { config, text in config.overlay.text = text },
            current: { $0.overlay.text.isEmpty ? "none" : $0.overlay.text }),
        ConfigurationKey(
            name: "overlay_on", valueName: "LIST",
            help: "where the text goes: pictures, preview, or both (comma-separated)",
            apply: { config, text in
                let targets = Set(text.split(separator: ",").map { $0.trimmingSpaces().lowercased() })
                guard !targets.isEmpty, targets.isSubset(of: ["pictures", "preview"]) else {
                    throw ConfigurationError("overlay_on: '\(text)' must list pictures, preview or both")
                }
                config.overlay.onPictures = targets.contains("pictures")
                config.overlay.onPreview = targets.contains("preview")
            },
            current: { config in
                [config.overlay.onPictures ? "pictures" : nil, config.overlay.onPreview ? "preview" : nil]
                    .compactMap { $0 }.joined(separator: ",")
            }),
        boolean("overlay_utc", "the text's times in UTC rather than local time (TZ)", \.overlay.utc),
        ConfigurationKey(
            name: "overlay_position", valueName: "PLACE",
            help: "where the text sits: top-left, top-right, bottom-left, bottom-right, top or bottom",
            apply: { config, text in
                guard let position = TextOverlay.Position(rawValue: text.lowercased()) else {
                    throw ConfigurationError(
                        "overlay_position: '\(text)' is not one of \(TextOverlay.Position.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                config.overlay.style.position = position
            },
            current: { $0.overlay.style.position.rawValue }),
        ConfigurationKey(
            name: "overlay_size", valueName: "PIXELS",
            help: "text height in pixels, 6 to 512; 0 scales it with the picture (a 30th of its height)",
            apply: { config, text in
                guard let size = Int(text), size == 0 || (6...512).contains(size) else {
                    throw ConfigurationError(
                        "overlay_size: '\(text)' is not 0 or a whole number from 6 to 512")
                }
                config.overlay.style.pixelSize = size
            },
            current: { String($0.overlay.style.pixelSize) }),
        ConfigurationKey(
            name: "overlay_font", valueName: "FILE",
            help:
                "font file for the text (TrueType, OpenType...); the built-in bitmap font is used, with a log line, when it cannot be read",
            apply: { config, text in config.overlay.style.fontPath = text },
            current: { $0.overlay.style.fontPath }),
        color("overlay_color", "the text's colour, #RRGGBB", \.overlay.style.color),
        color(
            "overlay_box_color", "the colour of the box behind the text, #RRGGBB", \.overlay.style.boxColor),
        ConfigurationKey(
            name: "overlay_box_opacity", valueName: "0-255",
            help: "how much the box hides the picture behind the text: 0 no box, 255 opaque",
            apply: { config, text in
                guard let opacity = Int(text), (0...255).contains(opacity) else {
                    throw ConfigurationError(
                        "overlay_box_opacity: '\(text)' is not a whole number from 0 to 255")
                }
                config.overlay.style.boxOpacity = opacity
            },
            current: { String($0.overlay.style.boxOpacity) }),
    ]

    private static func color(
        _ name: String, _ help: String,
        _ keyPath: WritableKeyPath<ShutterConfiguration, TextOverlay.RGB> & Sendable
    ) -> ConfigurationKey {
        ConfigurationKey(
            name: name, valueName: "COLOR", help: help,
            apply: { config, text in
                guard let color = TextOverlay.RGB(hex: text) else {
                    throw ConfigurationError("\(name): '\(text)' is not a colour like #ffffff")
                }
                config[keyPath: keyPath] = color
            },
            current: { $0[keyPath: keyPath].description })
    }
}
