import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Finds the V4L2 video capture devices on this machine.
public enum V4L2Discovery {
    /// How many `/dev/videoN` nodes are probed by name, beyond those the directory lists.
    public static let probedNodeCount = 64

    /// Every streaming video capture device, by node number; nodes that cannot be opened or are
    /// not capture devices (such as a UVC camera's metadata node) are left out, and logged at debug
    /// level, or as a warning when permission is missing, since that hides a real camera.
    public static func captureDevices(directory: String = "/dev", logger: Logger? = nil)
        -> [CameraDescription]
    {
        devicePaths(in: directory).compactMap { describeLoggingFailures(path: $0, logger: logger) }
    }

    /// The capture device with the lowest node number, if there is one.
    public static func firstCaptureDevice(directory: String = "/dev", logger: Logger? = nil)
        -> CameraDescription?
    {
        // Lazily, so nodes after the first capture device are never opened.
        devicePaths(in: directory).lazy.compactMap { describeLoggingFailures(path: $0, logger: logger) }.first
    }

    /// `describe(path:)`, with a node that cannot be opened logged (a warning when permission is
    /// missing, since that hides a real camera) and left out.
    private static func describeLoggingFailures(path: String, logger: Logger?) -> CameraDescription? {
        do {
            return try describe(path: path)
        } catch CameraError.permissionDenied(let path, let message) {
            logger?.warning("cannot open a video device", ["device": path, "error": message])
        } catch {
            logger?.debug("skipping a video device", ["device": path, "error": String(describing: error)])
        }
        return nil
    }

    /// Opens `path` and describes it with every format, size and rate, or returns nil if it is not
    /// a streaming video capture device.
    public static func describe(path: String) throws -> CameraDescription? {
        let device = try V4L2Device.open(path)
        defer { device.close() }
        let capabilities = try device.capabilities()
        guard capabilities.isStreamingVideoCapture else { return nil }
        return CameraDescription(
            path: path, driver: capabilities.driver, card: capabilities.card, busInfo: capabilities.busInfo,
            formats: try device.offeredFormats(near: nil).map(FormatDescription.init))
    }

    /// The `videoN` nodes in `directory`, by number: those `readdir` lists, plus those among
    /// video0...video63 that `access` finds (a node may exist without being listed, as under an
    /// LD_PRELOAD emulation, which answers `open` and `access` but not `readdir`).
    static func devicePaths(in directory: String, probeCount: Int = probedNodeCount) -> [String] {
        var numbers = Set(listedNames(in: directory).compactMap(videoNodeNumber))
        for number in 0..<probeCount where !numbers.contains(number) {
            let path = "\(directory)/video\(number)"
            if (try? syscall("access") { access(path, F_OK) }) != nil { numbers.insert(number) }
        }
        return numbers.sorted().map { "\(directory)/video\($0)" }
    }

    /// N for a name `videoN` (digits only, no sign or leading zero unless N is 0), else nil.
    static func videoNodeNumber(_ name: String) -> Int? {
        guard name.hasPrefix("video") else { return nil }
        let digits = name.dropFirst(5)
        guard !digits.isEmpty, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
            digits == "0" || !digits.hasPrefix("0")
        else { return nil }
        return Int(digits)
    }

    /// The entry names `readdir` gives for `directory`, or none if it cannot be opened.
    private static func listedNames(in directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            names.append(directoryEntryName(entry))
        }
        return names
    }
}
