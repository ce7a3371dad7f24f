#if canImport(Glibc)
    import Glibc
#endif

/// The name of an entry `readdir(3)` returned, read up to its NUL through a pointer.
///
/// Never copy `entry.pointee` or its `d_name`: glibc packs the entries of a directory into one
/// buffer, each only `d_reclen` bytes long, so copying the whole `struct dirent` (256 bytes of
/// name) reads past the end of that buffer for an entry near its end. AddressSanitizer caught it
/// as a heap-buffer-overflow when the daemon checked a directory of 100,000 pictures
/// (docs/sanitizers.md).
public func directoryEntryName(_ entry: UnsafePointer<dirent>) -> String {
    let offset = MemoryLayout<dirent>.offset(of: \dirent.d_name)!
    return String(cString: (UnsafeRawPointer(entry) + offset).assumingMemoryBound(to: CChar.self))
}
