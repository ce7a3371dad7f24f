import CSQLite
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Why a catalog operation failed; the only error `MediaCatalog` throws.
public enum CatalogError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The disk or the user's quota is full (`ENOSPC`, `EDQUOT`, or SQLite's `SQLITE_FULL`).
    case storageFull(SystemError)
    /// A file operation on the media directory failed.
    case io(SystemError)
    /// The database failed.
    case database(DatabaseError)
    /// The caller passed a value the catalog cannot use.
    case invalidArgument(String)
    /// Another catalog, in this or another process, holds the data directory's lock.
    case dataDirectoryInUse(String)
    /// The database was written by a newer program with a schema this one does not know.
    case unsupportedSchemaVersion(found: Int32, supported: Int32)

    public var description: String {
        switch self {
        case .storageFull(let error): "storage full: \(error)"
        case .io(let error): "I/O error: \(error)"
        case .database(let error): "database error: \(error)"
        case .invalidArgument(let message): "invalid argument: \(message)"
        case .dataDirectoryInUse(let path): "data directory \(path) is in use by another catalog"
        case .unsupportedSchemaVersion(let found, let supported):
            "database schema version \(found) is newer than the supported version \(supported)"
        }
    }

    /// `error` as a catalog error, with a full disk told apart from other failures.
    init(_ error: any Error) {
        switch error {
        case let error as CatalogError:
            self = error
        case let error as SystemError:
            self = Self.isStorageFull(errno: error.errno) ? .storageFull(error) : .io(error)
        case let error as DatabaseError:
            // SQLite reports a full disk as SQLITE_FULL, but a failed write of the WAL or of the
            // database file can also surface as SQLITE_IOERR_WRITE with the errno kept in
            // sqlite3_system_errno (https://www.sqlite.org/c3ref/system_errno.html).
            if error.resultCode == SQLITE_FULL || Self.isStorageFull(errno: error.systemErrno) {
                let code = error.systemErrno != 0 ? error.systemErrno : ENOSPC
                self = .storageFull(SystemError(errno: code, call: "sqlite3: \(error.message)"))
            } else {
                self = .database(error)
            }
        default:
            // Only the three types above are thrown below the catalog; this keeps the mapping total
            // without trapping if that ever changes.
            self = .io(SystemError(errno: EIO, call: String(describing: error)))
        }
    }

    /// Whether this is `storageFull`.
    public var isStorageFull: Bool {
        if case .storageFull = self { return true }
        return false
    }

    private static func isStorageFull(errno: Int32) -> Bool {
        errno == ENOSPC || errno == EDQUOT
    }
}
