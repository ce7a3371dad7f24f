import ShutterCamera

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
    ]
}
