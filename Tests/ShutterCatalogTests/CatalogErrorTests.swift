import CSQLite
import ShutterSystem
import Testing

@testable import ShutterCatalog

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct CatalogErrorTests {
    @Test(arguments: [ENOSPC, EDQUOT])
    func aFullDiskIsStorageFull(code: Int32) {
        let error = SystemError(errno: code, call: "write")
        #expect(CatalogError(error) == .storageFull(error))
    }

    @Test func otherSystemErrorsAreIO() {
        let error = SystemError(errno: EIO, call: "fsync")
        #expect(CatalogError(error) == .io(error))
    }

    @Test func sqliteFullIsStorageFull() {
        let full = DatabaseError(extendedResultCode: SQLITE_FULL, message: "database or disk is full")
        guard case .storageFull(let error) = CatalogError(full) else {
            Issue.record("not storage full: \(CatalogError(full))")
            return
        }
        #expect(error.errno == ENOSPC)
    }

    @Test func aWriteErrorWithENOSPCInsideSQLiteIsStorageFull() {
        // SQLITE_IOERR_WRITE, with the errno SQLite saw.
        let ioError = DatabaseError(extendedResultCode: 778, message: "disk I/O error", systemErrno: EDQUOT)
        guard case .storageFull(let error) = CatalogError(ioError) else {
            Issue.record("not storage full: \(CatalogError(ioError))")
            return
        }
        #expect(error.errno == EDQUOT)
    }

    @Test func aFailedWALSyncWithENOSPCIsStorageFull() {
        // SQLITE_IOERR_FSYNC (1034): delayed allocation can report a full disk only at fsync.
        let ioError = DatabaseError(extendedResultCode: 1034, message: "disk I/O error", systemErrno: ENOSPC)
        #expect(CatalogError(ioError).isStorageFull)
        // The same code with another errno is a database failure, not a full disk.
        let other = DatabaseError(extendedResultCode: 1034, message: "disk I/O error", systemErrno: EIO)
        #expect(CatalogError(other) == .database(other))
    }

    @Test func otherDatabaseErrorsStayDatabaseErrors() {
        let error = DatabaseError(extendedResultCode: SQLITE_CONSTRAINT, message: "constraint", sql: "INSERT")
        #expect(CatalogError(error) == .database(error))
        #expect(CatalogError(CatalogError.invalidArgument("x")) == .invalidArgument("x"))
    }
}
