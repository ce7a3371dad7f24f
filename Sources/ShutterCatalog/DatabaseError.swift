import CSQLite
import CShutterSQLite

/// A failed SQLite call: the extended result code, SQLite's message, and the SQL that ran.
public struct DatabaseError: Error, CustomStringConvertible, Equatable, Sendable {
    /// The extended result code, such as `SQLITE_CONSTRAINT_PRIMARYKEY` (1555).
    public let extendedResultCode: Int32
    /// What `sqlite3_errmsg` said at the time of the failure.
    public let message: String
    /// The statement that failed, if the failure came from one.
    public let sql: String?
    /// The errno of the last failed OS call inside SQLite (`sqlite3_system_errno`), or 0.
    public let systemErrno: Int32

    public init(extendedResultCode: Int32, message: String, sql: String? = nil, systemErrno: Int32 = 0) {
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.sql = sql
        self.systemErrno = systemErrno
    }

    /// The primary result code, such as `SQLITE_CONSTRAINT` (19): the low byte of the extended one
    /// (https://www.sqlite.org/rescode.html#primary_result_codes_versus_extended_result_codes).
    public var resultCode: Int32 { extendedResultCode & 0xFF }

    public var description: String {
        var text = "SQLite error \(extendedResultCode): \(message)"
        if let sql { text += " (while running: \(sql))" }
        return text
    }

    /// The error SQLite reports for `connection` after a call returned `code`.
    static func lastError(of connection: OpaquePointer, code: Int32, sql: String?) -> DatabaseError {
        // The errno of the write or sync that failed, kept by the VFS as it happened, is the cause;
        // sqlite3_system_errno is errno when the statement ended, after SQLite's recovery made
        // other calls (CShutterSQLite.h). Taken for every error, so none is left for a later one.
        let failedCallErrno = shutter_sqlite_take_io_errno()
        let primary = code & 0xFF
        let systemErrno =
            (primary == SQLITE_IOERR || primary == SQLITE_FULL) && failedCallErrno != 0
            ? failedCallErrno : sqlite3_system_errno(connection)
        return DatabaseError(
            extendedResultCode: code,
            message: String(cString: sqlite3_errmsg(connection)),
            sql: sql,
            systemErrno: systemErrno)
    }

    /// A misuse detected on the Swift side, reported like SQLite's own `SQLITE_MISUSE`.
    static func misuse(_ message: String, sql: String?) -> DatabaseError {
        DatabaseError(extendedResultCode: SQLITE_MISUSE, message: message, sql: sql)
    }
}
