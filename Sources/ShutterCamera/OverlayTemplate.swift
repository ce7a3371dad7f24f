#if canImport(Glibc)
    import Glibc
#endif

/// The burned-in text as configured (`--overlay-text`), and its expansion for one frame.
///
/// Lines are separated by `\n` (a real newline, or the two characters `\` and `n` as typed on a
/// command line). strftime(3) conversions (`%Y %m %d %H %M %S %a %b %z %Z` and the rest) give
/// the frame's capture time, `%f` its milliseconds, and `{camera}`, `{label}`, `{frame}`,
/// `{job}`, `{width}`, `{height}` what they say (empty when there is none); an unknown `{name}`
/// stays as written.
public struct OverlayTemplate: Sendable, Equatable {
    /// The template's lines.
    public let lines: [String]

    /// What the fields of one frame's text are.
    public struct Fields: Sendable {
        /// Capture time, UTC milliseconds since 1970.
        public var wallMilliseconds: Int64
        /// `{camera}`: the camera's name.
        public var camera: String
        /// `{label}`: the picture's label; nil on the preview and for pictures without one.
        public var label: String?
        /// `{frame}`: the camera's frame number.
        public var frame: UInt64
        /// `{job}`: the job that took the picture; nil on the preview and for snaps.
        public var job: Int64?
        /// `{width}` and `{height}`: the picture's size, as turned.
        public var width: Int
        public var height: Int

        /// The fields of one frame or picture.
        public init(
            wallMilliseconds: Int64, camera: String, label: String? = nil, frame: UInt64, job: Int64? = nil,
            width: Int, height: Int
        ) {
            self.wallMilliseconds = wallMilliseconds
            self.camera = camera
            self.label = label
            self.frame = frame
            self.job = job
            self.width = width
            self.height = height
        }
    }

    /// The template `text`; nil when it is empty (no overlay).
    public init?(_ text: String) {
        guard !text.isEmpty else { return nil }
        lines = text.replacing("\\n", with: "\n").split(separator: "\n", omittingEmptySubsequences: false)
            .map(String.init)
    }

    /// Whether any line names a field that differs between pictures of the same frame.
    public var usesPictureFields: Bool {
        lines.contains { $0.contains("{label}") || $0.contains("{job}") }
    }

    /// The lines for one frame, in UTC or in local time (the daemon's `TZ`).
    public func expand(_ fields: Fields, utc: Bool) -> [String] {
        let seconds = Int64(floor(Double(fields.wallMilliseconds) / 1000))
        let milliseconds = Int(fields.wallMilliseconds - seconds * 1000)
        var time = time_t(seconds)
        var parts = tm()
        if utc { gmtime_r(&time, &parts) } else { localtime_r(&time, &parts) }
        return lines.map { line in
            Self.substituteFields(Self.strftime(Self.millisecondsFilled(line, milliseconds), parts), fields)
        }
    }

    /// `%f` replaced by three digits of milliseconds; `%%` kept for strftime.
    static func millisecondsFilled(_ line: String, _ milliseconds: Int) -> String {
        guard line.contains("%f") else { return line }
        var result = ""
        var scalars = line.unicodeScalars.makeIterator()
        while let scalar = scalars.next() {
            guard scalar == "%" else {
                result.unicodeScalars.append(scalar)
                continue
            }
            guard let next = scalars.next() else {
                result += "%"
                break
            }
            if next == "f" {
                result +=
                    milliseconds < 10
                    ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
            } else {
                result += "%"
                result.unicodeScalars.append(next)
            }
        }
        return result
    }

    /// strftime(3) of `format`; a line too long for 1 KiB comes back as written.
    static func strftime(_ format: String, _ parts: tm) -> String {
        guard format.contains("%") else { return format }
        var parts = parts
        var buffer = [CChar](repeating: 0, count: 1024)
        let count = Glibc.strftime(&buffer, buffer.count, format, &parts)
        guard count > 0 else { return format }
        return String(decoding: buffer[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// `{name}` fields replaced in one pass, so a label that itself says `{frame}` stays as it is.
    static func substituteFields(_ line: String, _ fields: Fields) -> String {
        guard line.contains("{") else { return line }
        var result = ""
        var rest = Substring(line)
        while let open = rest.firstIndex(of: "{") {
            result += rest[..<open]
            guard let close = rest[open...].firstIndex(of: "}") else {
                result += rest[open...]
                return result
            }
            let name = rest[rest.index(after: open)..<close]
            switch name {
            case "camera": result += fields.camera
            case "label": result += fields.label ?? ""
            case "frame": result += String(fields.frame)
            case "job": result += fields.job.map { String($0) } ?? ""
            case "width": result += String(fields.width)
            case "height": result += String(fields.height)
            default: result += rest[open...close]
            }
            rest = rest[rest.index(after: close)...]
        }
        return result + rest
    }
}
