import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// An exclusive `flock` on `<dataDirectory>/catalog.lock`, held while a catalog is open.
///
/// Two catalogs on one directory would hand out the same ids from their in-memory counters, and
/// one's rename would replace the other's picture. flock(2) locks conflict between different open
/// file descriptions even inside one process, so a second open here fails too. A separate file is
/// used because SQLite holds POSIX locks on the database file, and on NFS flock is emulated with
/// those same locks (flock(2), "NFS details").
final class DataDirectoryLock {
    private let descriptor: Int32

    init(directory: String) throws {
        let path = "\(directory)/catalog.lock"
        let descriptor = try syscall("open \(path)") { open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600) }
        do {
            _ = try syscall("flock \(path)") { flock(descriptor, LOCK_EX | LOCK_NB) }
        } catch let error as SystemError where error.errno == EWOULDBLOCK {
            closeDescriptor(descriptor)
            throw CatalogError.dataDirectoryInUse(directory)
        } catch {
            closeDescriptor(descriptor)
            throw error
        }
        self.descriptor = descriptor
    }

    deinit {
        // Closing the last descriptor of the open file description releases the lock (flock(2)).
        closeDescriptor(descriptor)
    }
}
