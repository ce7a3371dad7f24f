/// One SQLite value, in SQLite's five storage classes (https://www.sqlite.org/datatype3.html).
public enum DatabaseValue: Equatable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])

    /// SQLite's name for the storage class, for messages (never the value itself, which may be large).
    public var storageClassName: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }
}

/// A Swift type that can be bound to a statement parameter and read back from a column.
public protocol DatabaseValueConvertible {
    /// The value to bind.
    var databaseValue: DatabaseValue { get }
    /// The Swift value for a column value, or nil if the value has another type.
    init?(databaseValue: DatabaseValue)
}

extension Int64: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(self) }

    public init?(databaseValue: DatabaseValue) {
        guard case .integer(let value) = databaseValue else { return nil }
        self = value
    }
}

extension Int: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .integer(Int64(self)) }

    public init?(databaseValue: DatabaseValue) {
        guard case .integer(let value) = databaseValue, let exact = Int(exactly: value) else { return nil }
        self = exact
    }
}

extension Bool: DatabaseValueConvertible {
    // SQLite has no boolean type; 0 and 1 are what its own boolean expressions produce.
    public var databaseValue: DatabaseValue { .integer(self ? 1 : 0) }

    public init?(databaseValue: DatabaseValue) {
        guard case .integer(let value) = databaseValue else { return nil }
        self = value != 0
    }
}

extension Double: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .real(self) }

    public init?(databaseValue: DatabaseValue) {
        switch databaseValue {
        case .real(let value): self = value
        case .integer(let value): self = Double(value)
        default: return nil
        }
    }
}

extension String: DatabaseValueConvertible {
    public var databaseValue: DatabaseValue { .text(self) }

    public init?(databaseValue: DatabaseValue) {
        guard case .text(let value) = databaseValue else { return nil }
        self = value
    }
}

extension Array: DatabaseValueConvertible where Element == UInt8 {
    public var databaseValue: DatabaseValue { .blob(self) }

    public init?(databaseValue: DatabaseValue) {
        guard case .blob(let value) = databaseValue else { return nil }
        self = value
    }
}
