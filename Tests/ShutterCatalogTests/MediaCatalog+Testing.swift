import ShutterSystem

@testable import ShutterCatalog

#if canImport(Glibc)
    import Glibc
#endif

/// A logger for tests that drops everything below errors, to keep test output readable.
let quietLogger = Logger(label: "shutter.catalog.test", level: .error)

extension MediaCatalog {
    /// Opens the catalog in `directory` for a test.
    static func open(_ directory: String, logger: Logger = quietLogger) throws -> MediaCatalog {
        try MediaCatalog(dataDirectory: directory, logger: logger)
    }

    /// Adds a picture whose bytes and time are derived from `seed`.
    @discardableResult
    func add(seed: Int, source: String = "test-camera", jobID: Int64? = nil, label: String? = nil) throws
        -> MediaRecord
    {
        try add(
            jpeg: fakeJPEG(seed: seed), takenAt: 1_700_000_000_000 + Int64(seed), width: 640, height: 480,
            source: source, jobID: jobID, label: label)
    }
}

/// Distinct bytes per seed that start and end like a JPEG (the catalog does not decode them).
func fakeJPEG(seed: Int, count: Int = 300) -> [UInt8] {
    var bytes: [UInt8] = [0xFF, 0xD8]
    var state = UInt64(truncatingIfNeeded: seed) &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
    while bytes.count < count - 2 {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        bytes.append(UInt8(truncatingIfNeeded: state >> 33))
    }
    return bytes + [0xFF, 0xD9]
}

/// The whole content of the file at `path`, or nil if it cannot be read.
func readFile(_ path: String) -> [UInt8]? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { closeDescriptor(descriptor) }
    var content: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65536)
    while true {
        let count = read(descriptor, &buffer, buffer.count)
        if count < 0 && errno == EINTR { continue }
        guard count >= 0 else { return nil }
        if count == 0 { return content }
        content += buffer[..<count]
    }
}

/// Writes `bytes` to a new file at `path`.
func writeFile(_ path: String, _ bytes: [UInt8]) throws {
    let descriptor = try syscall("open") { open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644) }
    defer { closeDescriptor(descriptor) }
    _ = try bytes.withUnsafeBytes { buffer in
        try syscall("write") { write(descriptor, buffer.baseAddress, buffer.count) }
    }
}

/// Whether something exists at `path`.
func fileExists(_ path: String) -> Bool {
    access(path, F_OK) == 0
}

/// The names in `directory`, sorted, without `.` and `..`.
func directoryNames(_ directory: String) -> [String] {
    guard let stream = opendir(directory) else { return [] }
    defer { closedir(stream) }
    var names: [String] = []
    while let entry = readdir(stream) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}
