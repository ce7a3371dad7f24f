import CSQLite
import CShutterSQLite

/// SQLite copies text and blobs bound with this destructor before `sqlite3_bind_*` returns
/// (https://www.sqlite.org/c3ref/bind_blob.html). The C macro is a cast of -1 that Swift does
/// not import. Binding a Swift string's temporary buffer with `SQLITE_STATIC` instead leaves
/// SQLite reading freed memory at step time (see docs/SWIFT-ON-LINUX.md).
private let sqliteTransient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// One prepared statement; it owns its `sqlite3_stmt` and finalizes it when released.
///
/// Not thread-safe: it belongs to the `Database` that made it and to that database's owner.
public final class Statement {
    /// The SQL this statement was prepared from.
    public let sql: String
    let handle: OpaquePointer

    /// Takes ownership of `handle`, prepared from `sql`.
    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// How many `?` parameters the statement has.
    public var parameterCount: Int { Int(sqlite3_bind_parameter_count(handle)) }

    /// Resets the statement and binds `arguments`, one per parameter.
    public func bind(_ arguments: StatementArguments) throws {
        // A reset statement also ends the read transaction a half-read SELECT keeps open,
        // which would otherwise stop WAL checkpoints (https://www.sqlite.org/c3ref/reset.html).
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        guard arguments.values.count == parameterCount else {
            throw DatabaseError.misuse(
                "\(arguments.values.count) arguments for \(parameterCount) parameters", sql: sql)
        }
        for (offset, value) in arguments.values.enumerated() {
            let code = bind(value, at: Int32(offset + 1))
            guard code == SQLITE_OK else {
                throw DatabaseError.lastError(of: connection, code: code, sql: sql)
            }
        }
    }

    /// Runs the statement to completion with `arguments`, ignoring any rows.
    public func execute(arguments: StatementArguments = []) throws {
        try forEachRow(arguments: arguments) { _ in }
    }

    /// Runs the statement with `arguments` and calls `body` for each row.
    ///
    /// The `Row` is valid only during the call that receives it.
    public func forEachRow(arguments: StatementArguments = [], _ body: (Row) throws -> Void) throws {
        try bind(arguments)
        defer { sqlite3_reset(handle) }
        Self.forgetEarlierIOErrno()
        while true {
            let code = sqlite3_step(handle)
            switch code {
            case SQLITE_ROW:
                try body(Row(statement: handle))
            case SQLITE_DONE:
                return
            default:
                throw DatabaseError.lastError(of: connection, code: code, sql: sql)
            }
        }
    }

    /// Every row, each turned into a value by `decode`.
    public func fetchAll<Value>(arguments: StatementArguments = [], _ decode: (Row) throws -> Value) throws
        -> [Value]
    {
        var values: [Value] = []
        try forEachRow(arguments: arguments) { values.append(try decode($0)) }
        return values
    }

    /// The first row turned into a value by `decode`, or nil if there is no row.
    public func fetchOne<Value>(arguments: StatementArguments = [], _ decode: (Row) throws -> Value) throws
        -> Value?
    {
        try bind(arguments)
        defer { sqlite3_reset(handle) }
        Self.forgetEarlierIOErrno()
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return try decode(Row(statement: handle))
        case SQLITE_DONE: return nil
        default: throw DatabaseError.lastError(of: connection, code: code, sql: sql)
        }
    }

    private var connection: OpaquePointer { sqlite3_db_handle(handle) }

    /// Drops an errno the VFS kept from a failure SQLite recovered from (a truncate it ignores),
    /// so that only a failure of this statement explains its error (`DatabaseError.lastError`).
    private static func forgetEarlierIOErrno() {
        _ = shutter_sqlite_take_io_errno()
    }

    private func bind(_ value: DatabaseValue, at index: Int32) -> Int32 {
        switch value {
        case .null:
            return sqlite3_bind_null(handle, index)
        case .integer(let integer):
            return sqlite3_bind_int64(handle, index, integer)
        case .real(let real):
            return sqlite3_bind_double(handle, index, real)
        case .text(var text):
            return text.withUTF8 { bytes in
                // A null pointer would bind NULL, not the empty string.
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_text(handle, index, "", 0, sqliteTransient)
                }
                return base.withMemoryRebound(to: CChar.self, capacity: bytes.count) {
                    sqlite3_bind_text64(
                        handle, index, $0, sqlite3_uint64(bytes.count), sqliteTransient, UInt8(SQLITE_UTF8))
                }
            }
        case .blob(let blob):
            return blob.withUnsafeBytes { bytes in
                // Same as text: a null pointer would bind NULL, not an empty blob.
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return sqlite3_bind_zeroblob(handle, index, 0)
                }
                return sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(bytes.count), sqliteTransient)
            }
        }
    }
}
