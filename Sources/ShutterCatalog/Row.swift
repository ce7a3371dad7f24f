import CSQLite

/// The current row of a running statement, read by column index (0 is the first column).
///
/// Valid only inside the closure that receives it: the next step overwrites it.
public struct Row {
    let statement: OpaquePointer

    /// How many columns the row has.
    public var count: Int { Int(sqlite3_column_count(statement)) }

    /// The value of `column` in SQLite's own storage class.
    public func value(at column: Int) -> DatabaseValue {
        let index = Int32(column)
        switch sqlite3_column_type(statement, index) {
        case SQLITE_INTEGER:
            return .integer(sqlite3_column_int64(statement, index))
        case SQLITE_FLOAT:
            return .real(sqlite3_column_double(statement, index))
        case SQLITE_TEXT:
            // The length must be read after the pointer: asking for the text may convert it
            // (https://www.sqlite.org/c3ref/column_blob.html).
            guard let text = sqlite3_column_text(statement, index) else { return .text("") }
            let length = Int(sqlite3_column_bytes(statement, index))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self))
        case SQLITE_BLOB:
            guard let blob = sqlite3_column_blob(statement, index) else { return .blob([]) }
            let length = Int(sqlite3_column_bytes(statement, index))
            return .blob(Array(UnsafeRawBufferPointer(start: blob, count: length)))
        default:
            return .null
        }
    }

    /// The value of `column` as `Value`, or nil if it is NULL or of another type.
    public subscript<Value: DatabaseValueConvertible>(_ column: Int) -> Value? {
        Value(databaseValue: value(at: column))
    }

    /// The value of `column` as `Value`; throws `SQLITE_MISMATCH` if it is NULL or of another type.
    public func decode<Value: DatabaseValueConvertible>(_ type: Value.Type = Value.self, at column: Int)
        throws
        -> Value
    {
        let raw = value(at: column)
        guard let decoded = Value(databaseValue: raw) else {
            let name =
                sqlite3_column_name(statement, Int32(column)).map { String(cString: $0) } ?? "\(column)"
            throw DatabaseError(
                extendedResultCode: SQLITE_MISMATCH,
                message: "column \(name) holds \(raw.storageClassName), not \(Value.self)",
                sql: sqlite3_sql(statement).map { String(cString: $0) })
        }
        return decoded
    }
}
