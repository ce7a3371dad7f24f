import FoundationEssentials

#if canImport(Glibc)
    import Glibc
#endif

/// Private directories for tests, made with mkdtemp(3) and removed with everything in them.
public enum TemporaryDirectory {
    /// Creates a new empty directory under `$TMPDIR` (or `/tmp`) and returns its path.
    public static func make(prefix: String = "shutter-test") throws -> String {
        let base = ProcessInfo.processInfo.environment["TMPDIR"].flatMap { $0.isEmpty ? nil : $0 } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        guard mkdtemp(&template) != nil else {
            throw TemporaryDirectoryError(errno: errno, path: "\(base)/\(prefix)-XXXXXX")
        }
        // mkdtemp replaced the X's in place; drop the terminating NUL.
        return String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes `path` and everything below it.
    public static func remove(_ path: String) throws {
        try FileManager.default.removeItem(atPath: path)
    }
}

/// Why `TemporaryDirectory.make` failed.
public struct TemporaryDirectoryError: Error, CustomStringConvertible {
    /// The errno mkdtemp(3) left.
    public let errno: Int32
    /// The template that was tried.
    public let path: String

    public var description: String { "mkdtemp \(path): errno \(errno)" }
}

/// Runs `body` with a new temporary directory, removed when `body` returns or throws.
///
/// A closure rather than an object with a `deinit`, because Swift may release an object right
/// after its last use, removing the directory while the test still works in it.
public func withTemporaryDirectory<Result>(_ body: (String) async throws -> Result) async throws -> Result {
    let path = try TemporaryDirectory.make()
    defer { try? TemporaryDirectory.remove(path) }
    return try await body(path)
}
