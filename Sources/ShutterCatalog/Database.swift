import CSQLite
import CShutterSQLite

/// One SQLite connection, in the GRDB shape: `execute(sql:arguments:)`, prepared and cached
/// statements, typed arguments and rows.
///
/// Not Sendable and not thread-safe: exactly one serial owner (the `MediaCatalog` actor) uses it.
public final class Database {
    /// The file the connection is open on.
    public let path: String
    let handle: OpaquePointer
    private var statementCache: [String: Statement] = [:]

    /// How long a statement waits for another process's lock before failing with `SQLITE_BUSY`.
    public static let busyTimeoutMilliseconds: Int32 = 5000

    /// Opens (creating if needed) the database at `path` in WAL mode with full synchronous commits;
    /// with `readOnly`, opens an existing WAL database for reading only (a second connection that
    /// reads beside the writer: https://www.sqlite.org/wal.html#concurrency).
    public init(path: String, readOnly: Bool = false) throws {
        // SQLITE_OPEN_NOMUTEX selects the multi-thread mode, in which "SQLite can be safely used by
        // multiple threads provided that no single database connection nor any object derived from
        // database connection, such as a prepared statement, is used in two or more threads at the
        // same time" (https://www.sqlite.org/threadsafe.html). The connection has one serial owner,
        // an actor, so the per-connection mutex of the serialized mode would buy nothing.
        // SQLITE_OPEN_EXRESCODE makes every call return extended result codes.
        let access = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        let flags = access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        var connection: OpaquePointer?
        // The unix VFS, keeping the errno of a failed write or sync (CShutterSQLite) so that a full
        // disk is reported as one whichever call met it; the plain default if that cannot register.
        let vfs: String? = shutter_sqlite_register_vfs() == SQLITE_OK ? SHUTTER_SQLITE_VFS_NAME : nil
        let code = sqlite3_open_v2(path, &connection, flags, vfs)
        guard let connection else {
            throw DatabaseError(extendedResultCode: code, message: String(cString: sqlite3_errstr(code)))
        }
        guard code == SQLITE_OK else {
            // "A database connection handle is usually returned ... even if an error occurs" and
            // must still be closed (https://www.sqlite.org/c3ref/open.html).
            let error = DatabaseError.lastError(of: connection, code: code, sql: nil)
            sqlite3_close_v2(connection)
            throw error
        }
        self.path = path
        self.handle = connection
        try configure(readOnly: readOnly)
    }

    deinit {
        // Statements must be finalized before the connection can close; close_v2 would otherwise
        // leave a zombie connection open until the last one goes (https://www.sqlite.org/c3ref/close.html).
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    private func configure(readOnly: Bool) throws {
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, Self.busyTimeoutMilliseconds)
        // WAL lets readers run during a write and makes a commit one append to the log
        // (https://www.sqlite.org/wal.html). The pragma answers with the mode in force, which stays
        // "delete" where WAL is impossible (no shared memory, some network file systems). A reader
        // only asks: the writer chose the mode, and outside WAL a reader would block the writer
        // (and be blocked by it) instead of reading beside it.
        let pragma = readOnly ? "PRAGMA journal_mode" : "PRAGMA journal_mode=WAL"
        let mode = try fetchOne(sql: pragma) { try $0.decode(String.self, at: 0) }
        guard mode?.lowercased() == "wal" else {
            throw DatabaseError(
                extendedResultCode: SQLITE_CANTOPEN,
                message: "journal_mode is \(mode ?? "unknown"), WAL is required",
                sql: pragma)
        }
        if readOnly {
            try execute(sql: "PRAGMA cache_size=-1024")
            return
        }
        // A picture the API reported as created must survive a power cut. In WAL mode,
        // synchronous=NORMAL skips the fsync at commit, so "a transaction committed in WAL mode with
        // synchronous=NORMAL might roll back following a power loss"; FULL syncs the WAL on every
        // commit (https://www.sqlite.org/pragma.html#pragma_synchronous).
        try execute(sql: "PRAGMA synchronous=FULL")
        // Off by default for compatibility (https://www.sqlite.org/foreignkeys.html#fk_enable); on,
        // so the references that later schema versions declare (jobs) are enforced.
        try execute(sql: "PRAGMA foreign_keys=ON")
        // A daemon that runs for months should not let its memory follow the library's size:
        // 1 MiB of page cache (the default is 2 MiB) holds every page the indexed lookups and
        // pages of 500 records touch (https://www.sqlite.org/pragma.html#pragma_cache_size).
        try execute(sql: "PRAGMA cache_size=-1024")
    }

    /// Runs every statement in `sql`, binding `arguments` to their parameters in order.
    public func execute(sql: String, arguments: StatementArguments = []) throws {
        var remaining = arguments.values[...]
        try sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let current = next, current.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let code = sqlite3_prepare_v3(handle, current, -1, 0, &statement, &tail)
                guard code == SQLITE_OK else {
                    throw DatabaseError.lastError(of: handle, code: code, sql: sql)
                }
                next = tail
                // Whitespace or a comment prepares to no statement.
                guard let statement else { continue }
                let prepared = Statement(handle: statement, sql: String(cString: sqlite3_sql(statement)))
                let count = min(prepared.parameterCount, remaining.count)
                try prepared.execute(arguments: StatementArguments(Array(remaining.prefix(count))))
                remaining = remaining.dropFirst(count)
            }
        }
        guard remaining.isEmpty else {
            throw DatabaseError.misuse("\(remaining.count) arguments left over", sql: sql)
        }
    }

    /// A new statement for `sql`, which must hold exactly one SQL statement.
    public func makeStatement(sql: String) throws -> Statement {
        try prepare(sql: sql, persistent: false)
    }

    /// The statement for `sql`, prepared once per connection and reused.
    ///
    /// Finish with it before asking for the same SQL again: both calls get the same statement.
    public func cachedStatement(sql: String) throws -> Statement {
        if let statement = statementCache[sql] { return statement }
        let statement = try prepare(sql: sql, persistent: true)
        statementCache[sql] = statement
        return statement
    }

    /// Every row of `sql` (a cached statement), each turned into a value by `decode`.
    public func fetchAll<Value>(
        sql: String, arguments: StatementArguments = [], _ decode: (Row) throws -> Value
    ) throws -> [Value] {
        try cachedStatement(sql: sql).fetchAll(arguments: arguments, decode)
    }

    /// The first row of `sql` (a cached statement) turned into a value by `decode`, or nil.
    public func fetchOne<Value>(
        sql: String, arguments: StatementArguments = [], _ decode: (Row) throws -> Value
    ) throws -> Value? {
        try cachedStatement(sql: sql).fetchOne(arguments: arguments, decode)
    }

    /// Rows changed by the last INSERT, UPDATE or DELETE (https://www.sqlite.org/c3ref/changes.html).
    public var changesCount: Int { Int(sqlite3_changes64(handle)) }

    /// The rowid of the last successful INSERT on this connection.
    public var lastInsertedRowID: Int64 { sqlite3_last_insert_rowid(handle) }

    /// Whether a transaction is open (the connection is not in autocommit mode).
    public var isInsideTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in one transaction: committed if it returns, rolled back if it throws.
    public func inTransaction<Value>(_ body: () throws -> Value) throws -> Value {
        // IMMEDIATE takes the write lock up front, so a busy database fails here, under
        // busy_timeout, rather than halfway through (https://www.sqlite.org/lang_transaction.html).
        try execute(sql: "BEGIN IMMEDIATE")
        do {
            let value = try body()
            try execute(sql: "COMMIT")
            return value
        } catch {
            // Some errors roll back by themselves; ROLLBACK then fails, and that failure says nothing new.
            if isInsideTransaction { try? execute(sql: "ROLLBACK") }
            throw error
        }
    }

    /// The schema version kept in the database header (`PRAGMA user_version`).
    public func userVersion() throws -> Int32 {
        Int32(try fetchOne(sql: "PRAGMA user_version") { try $0.decode(Int64.self, at: 0) } ?? 0)
    }

    /// Sets `PRAGMA user_version`; inside a transaction, it commits or rolls back with it.
    public func setUserVersion(_ version: Int32) throws {
        // Pragmas take no bound parameters; an Int32 formats to digits only.
        try execute(sql: "PRAGMA user_version = \(version)")
    }

    private func prepare(sql: String, persistent: Bool) throws -> Statement {
        // SQLITE_PREPARE_PERSISTENT tells SQLite the statement will be kept and reused, so it is
        // not built from the small lookaside memory (https://www.sqlite.org/c3ref/prepare.html).
        let flags = persistent ? UInt32(SQLITE_PREPARE_PERSISTENT) : 0
        var statement: OpaquePointer?
        var trailing = false
        let code = sql.withCString { start in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(handle, start, -1, flags, &statement, &tail)
            trailing = tail.map { !String(cString: $0).allSatisfy(\.isWhitespace) } ?? false
            return code
        }
        guard code == SQLITE_OK else {
            throw DatabaseError.lastError(of: handle, code: code, sql: sql)
        }
        guard let statement else {
            throw DatabaseError.misuse("the SQL holds no statement", sql: sql)
        }
        let prepared = Statement(handle: statement, sql: sql)
        guard !trailing else {
            throw DatabaseError.misuse("a statement holds exactly one SQL statement", sql: sql)
        }
        return prepared
    }
}
