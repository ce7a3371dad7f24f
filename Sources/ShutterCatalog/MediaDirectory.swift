import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// The picture files of the catalog: `<path>/<id>.jpg`, written through `.<id>.jpg.tmp`.
///
/// Names come only from ids the catalog assigned, never from client input.
struct MediaDirectory: Sendable {
    /// What the directory holds, sorted into the names the catalog writes.
    struct Listing {
        /// Ids of the `<id>.jpg` files, ascending.
        var mediaIDs: [Int64] = []
        /// Names of `.*.tmp` files left by unfinished writes.
        var temporaryFiles: [String] = []
        /// The largest id in any name the catalog writes, or 0.
        var largestID: Int64 = 0
    }

    let path: String

    func filePath(id: Int64) -> String { "\(path)/\(id).jpg" }

    func temporaryPath(id: Int64) -> String { "\(path)/.\(id).jpg.tmp" }

    /// Whether `<id>.jpg` exists.
    func exists(id: Int64) -> Bool {
        access(filePath(id: id), F_OK) == 0
    }

    /// Whether `<id>.jpg` or its temporary name exists: a leftover that `store` must not
    /// overwrite (rename(2) would replace it) or trip over (its `O_EXCL`).
    func isTaken(id: Int64) -> Bool {
        exists(id: id) || access(temporaryPath(id: id), F_OK) == 0
    }

    /// Writes `bytes` as the file of `id`, so that it is complete under its final name or absent.
    ///
    /// The data and the new name are on disk when this returns. On failure nothing is left behind,
    /// unless the cleanup fails too; the next open's reconciliation then removes the leftover.
    func store(_ bytes: [UInt8], id: Int64) throws {
        let temporary = temporaryPath(id: id)
        let final = filePath(id: id)
        // O_EXCL: never write through a file (or a link) that someone else put there (open(2)).
        let descriptor = try syscall("open \(temporary)") {
            open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        }
        var descriptorOpen = true
        var renamed = false
        do {
            try Self.writeAll(bytes, to: descriptor)
            // The data must be on disk before the rename makes the name visible, or a power cut can
            // leave a complete-looking name on an empty or partial file (rename(2), fsync(2)).
            _ = try syscall("fsync \(temporary)") { fsync(descriptor) }
            descriptorOpen = false
            try Self.close(descriptor, path: temporary)
            // rename(2) replaces the name atomically: readers see no file or the whole file.
            _ = try syscall("rename \(temporary)") { rename(temporary, final) }
            renamed = true
            // fsync(2): "Calling fsync() does not necessarily ensure that the entry in the directory
            // containing the file has also reached disk. For that an explicit fsync() on a file
            // descriptor for the directory is also needed."
            try synchronize()
        } catch {
            if descriptorOpen { closeDescriptor(descriptor) }
            _ = unlink(renamed ? final : temporary)
            throw error
        }
    }

    /// Removes the file of `id`; returns false if it did not exist.
    @discardableResult
    func remove(id: Int64) throws -> Bool {
        try removeFile(atPath: filePath(id: id))
    }

    /// Removes `name` from the directory; returns false if it did not exist.
    @discardableResult
    func remove(named name: String) throws -> Bool {
        try removeFile(atPath: "\(path)/\(name)")
    }

    /// Flushes the directory's entries (new, renamed and removed names) to disk.
    func synchronize() throws {
        let descriptor = try syscall("open \(path)") { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        defer { closeDescriptor(descriptor) }
        _ = try syscall("fsync \(path)") { fsync(descriptor) }
    }

    /// Reads the directory's names and sorts them into media files and leftovers.
    ///
    /// Names the catalog never writes are left out and left alone.
    func listing() throws -> Listing {
        var listing = Listing()
        // Subdirectories (`thumbs`) have no `.jpg` or `.tmp` name, so they classify as other.
        for name in try Self.entryNames(in: path) {
            switch Self.classify(name) {
            case .media(let id):
                listing.mediaIDs.append(id)
                listing.largestID = max(listing.largestID, id)
            case .temporary(let id):
                listing.temporaryFiles.append(name)
                listing.largestID = max(listing.largestID, id ?? 0)
            case .other:
                break
            }
        }
        // Sorted for the merge with the rows, which SQLite returns in id order.
        listing.mediaIDs.sort()
        return listing
    }

    // MARK: - Thumbnails

    /// The directory of thumbnails, `<path>/thumbs`, made on the first thumbnail stored.
    var thumbnailsPath: String { "\(path)/thumbs" }

    /// `<path>/thumbs/<id>-<width>.jpg`.
    func thumbnailPath(id: Int64, width: Int) -> String { "\(thumbnailsPath)/\(id)-\(width).jpg" }

    /// Writes `bytes` as the thumbnail of `id` at `width`, complete under its final name or absent.
    ///
    /// No fsync: a thumbnail lost in a power cut is made again on the next request.
    func storeThumbnail(_ bytes: [UInt8], id: Int64, width: Int) throws {
        do {
            _ = try syscall("mkdir \(thumbnailsPath)") { mkdir(thumbnailsPath, 0o755) }
        } catch let error as SystemError where error.errno == EEXIST {
            // Made by an earlier thumbnail; mkdir(2) is the check, so there is no race with a stat.
        }
        // Two requests may make the same thumbnail at once: each writes its own temporary name.
        let temporary =
            "\(thumbnailsPath)/.\(id)-\(width).jpg.\(UInt64.random(in: 0...UInt64.max)).tmp"
        let descriptor = try syscall("open \(temporary)") {
            open(temporary, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o644)
        }
        var descriptorOpen = true
        do {
            try Self.writeAll(bytes, to: descriptor)
            descriptorOpen = false
            try Self.close(descriptor, path: temporary)
            // rename(2) replaces the name atomically: readers see no thumbnail or a whole one.
            _ = try syscall("rename \(temporary)") { rename(temporary, thumbnailPath(id: id, width: width)) }
        } catch {
            if descriptorOpen { closeDescriptor(descriptor) }
            _ = unlink(temporary)
            throw error
        }
    }

    /// What `thumbs/` holds, sorted into the names the catalog writes there.
    struct ThumbnailListing {
        /// The size in bytes of each `<id>-<width>.jpg`, by id and width.
        var sizes: [Int64: [Int: Int64]] = [:]
        /// Names of `.*.tmp` files left by unfinished thumbnail writes.
        var temporaryFiles: [String] = []
    }

    /// Reads `thumbs/` (empty if it was never made). Other names are left out and left alone.
    func thumbnailListing() throws -> ThumbnailListing {
        var listing = ThumbnailListing()
        let names: [String]
        do {
            names = try Self.entryNames(in: thumbnailsPath)
        } catch let error as SystemError where error.errno == ENOENT {
            return listing
        }
        for name in names {
            if name.hasPrefix("."), name.hasSuffix(".tmp") {
                listing.temporaryFiles.append(name)
                continue
            }
            guard let (id, width) = Self.thumbnailName(name) else { continue }
            var info = stat()
            let path = "\(thumbnailsPath)/\(name)"
            do {
                _ = try syscall("lstat \(path)") { lstat(path, &info) }
            } catch let error as SystemError where error.errno == ENOENT {
                continue
            }
            listing.sizes[id, default: [:]][width] = Int64(info.st_size)
        }
        return listing
    }

    /// The picture id and width in a thumbnail's name, `<id>-<width>.jpg`, or nil for another name.
    static func thumbnailName(_ name: String) -> (id: Int64, width: Int)? {
        guard name.hasSuffix(".jpg") else { return nil }
        let stem = name.dropLast(4)
        guard let dash = stem.firstIndex(of: "-"), let id = canonicalID(stem[..<dash]),
            let width = canonicalID(stem[stem.index(after: dash)...])
        else { return nil }
        return (id, Int(clamping: width))
    }

    /// Removes `name` from `thumbs/`; returns false if it did not exist.
    @discardableResult
    func removeThumbnail(named name: String) throws -> Bool {
        try removeFile(atPath: "\(thumbnailsPath)/\(name)")
    }

    /// The names in the directory at `path`, without `.` and `..`.
    private static func entryNames(in path: String) throws -> [String] {
        let descriptor = try syscall("open \(path)") { open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC) }
        // fdopendir returns a pointer, which the integer `syscall` wrapper cannot check; on
        // success the stream owns the descriptor and closedir closes it (fdopendir(3)).
        guard let stream = fdopendir(descriptor) else {
            let error = SystemError(errno: errno, call: "fdopendir \(path)")
            closeDescriptor(descriptor)
            throw error
        }
        defer { closedir(stream) }
        var names: [String] = []
        while true {
            // readdir(3): NULL with errno unchanged is the end; NULL with errno set is an error.
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { throw SystemError(errno: errno, call: "readdir \(path)") }
                return names
            }
            let name = directoryEntryName(entry)
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// What a directory entry's name says it is.
    enum EntryKind: Equatable {
        case media(Int64)
        case temporary(Int64?)
        case other
    }

    /// `<id>.jpg` with a canonical positive id is media; any `.*.tmp` is an unfinished write.
    static func classify(_ name: String) -> EntryKind {
        if name.hasPrefix("."), name.hasSuffix(".tmp"), name.count > 4 {
            let inner = name.dropFirst().dropLast(4)
            let id = inner.hasSuffix(".jpg") ? canonicalID(inner.dropLast(4)) : nil
            return .temporary(id)
        }
        if name.hasSuffix(".jpg"), let id = canonicalID(name.dropLast(4)) {
            return .media(id)
        }
        return .other
    }

    /// The id spelled by `text` exactly as `String(id)` writes it (no sign, no leading zero).
    private static func canonicalID(_ text: Substring) -> Int64? {
        guard let id = Int64(text), id > 0, String(id) == text else { return nil }
        return id
    }

    private func removeFile(atPath path: String) throws -> Bool {
        do {
            _ = try syscall("unlink \(path)") { unlink(path) }
            return true
        } catch let error as SystemError where error.errno == ENOENT {
            return false
        }
    }

    private static func writeAll(_ bytes: [UInt8], to descriptor: Int32) throws {
        try bytes.withUnsafeBytes { buffer in
            var offset = 0
            // write(2) may write fewer bytes than asked; loop until all are written.
            while offset < buffer.count {
                let written = try syscall("write") {
                    write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                }
                offset += written
            }
        }
    }

    private static func close(_ descriptor: Int32, path: String) throws {
        // close(2) can report a deferred write error (NFS, quota); the descriptor is gone either way,
        // so this must not retry (see closeDescriptor).
        if closeDescriptor(descriptor) == -1, errno != EINTR {
            throw SystemError(errno: errno, call: "close \(path)")
        }
    }
}
