import ShutterSystem
import Testing

#if canImport(Glibc)
    import Glibc
#endif

struct DirectoryEntryTests {
    /// Enough long names that glibc's 32 KiB buffer of entries fills up, so some entry sits right
    /// at its end: copying a whole `struct dirent` there read past it (caught under ASan).
    @Test func namesOfEveryLengthAreReadWholeFromAFullDirectoryBuffer() throws {
        var template = Array("/tmp/shutter-dirent-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        let directory = try #require(made.map { String(cString: $0) })
        var created: Set<String> = []
        for index in 0..<600 {
            // From the shortest to NAME_MAX (255 bytes); every seventh of two-byte characters.
            let prefix = "\(index)-"
            let bytes = prefix.utf8.count + 1 + (index * 37) % (255 - prefix.utf8.count)
            let name =
                index % 7 == 0
                ? prefix + String(repeating: "é", count: max(1, (bytes - prefix.utf8.count) / 2))
                : prefix + String(repeating: "n", count: bytes - prefix.utf8.count)
            let descriptor = open(directory + "/" + name, O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
            #expect(descriptor >= 0, "\(name): errno \(errno)")
            close(descriptor)
            created.insert(name)
        }
        defer {
            for name in created { unlink(directory + "/" + name) }
            rmdir(directory)
        }
        let stream = try #require(opendir(directory))
        defer { closedir(stream) }
        var listed: Set<String> = []
        while let entry = readdir(stream) { listed.insert(directoryEntryName(entry)) }
        #expect(listed == created.union([".", ".."]))
        #expect(created.contains { $0.utf8.count == 255 })
    }
}
