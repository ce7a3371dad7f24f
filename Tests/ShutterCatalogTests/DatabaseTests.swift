import CSQLite
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

@Suite struct DatabaseTests {
    @Test func openUsesWALFullSynchronousAndForeignKeys() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/test.sqlite")
            #expect(
                try database.fetchOne(sql: "PRAGMA journal_mode") { try $0.decode(String.self, at: 0) }
                    == "wal")
            // 2 is FULL (https://www.sqlite.org/pragma.html#pragma_synchronous).
            #expect(try database.fetchOne(sql: "PRAGMA synchronous") { try $0.decode(Int.self, at: 0) } == 2)
            #expect(
                try database.fetchOne(sql: "PRAGMA foreign_keys") { try $0.decode(Bool.self, at: 0) } == true)
            #expect(
                try database.fetchOne(sql: "PRAGMA busy_timeout") { try $0.decode(Int.self, at: 0) } == 5000)
        }
    }

    @Test func filesGoThroughTheVFSThatKeepsAFailedWritesErrno() async throws {
        // A full disk met by the WAL's fsync is told apart only through this VFS (CShutterSQLite);
        // Tests/e2e/test_faults.py makes that fsync fail with ENOSPC and expects a 507.
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/test.sqlite")
            var name: UnsafeMutablePointer<CChar>?
            #expect(sqlite3_file_control(database.handle, "main", SQLITE_FCNTL_VFSNAME, &name) == SQLITE_OK)
            defer { sqlite3_free(name) }
            #expect(name.map { String(cString: $0) } == "shutter-unix/unix")
            // And it works as the default one does: a write and a read back through the WAL.
            try database.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)")
            try database.inTransaction { try database.execute(sql: "INSERT INTO t (id) VALUES (7)") }
            #expect(try database.fetchOne(sql: "SELECT id FROM t") { try $0.decode(Int.self, at: 0) } == 7)
        }
    }

    @Test func manyDistinctStringsAndBlobsReadBackIntact() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/test.sqlite")
            try database.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, data BLOB)")
            // Distinct lengths and contents, so a binding that reads freed or reused memory shows up.
            let values: [(String, [UInt8])] = (0..<3000).map { index in
                let name = "name-\(index)-" + String(repeating: "é✓", count: index % 37) + "-\(index * 7919)"
                return (name, Array(name.utf8.reversed()))
            }
            try database.inTransaction {
                let insert = try database.cachedStatement(
                    sql: "INSERT INTO t (id, name, data) VALUES (?, ?, ?)")
                for (index, value) in values.enumerated() {
                    try insert.execute(arguments: [index, value.0, value.1])
                }
            }
            let read = try database.fetchAll(sql: "SELECT name, data FROM t ORDER BY id") { row in
                (try row.decode(String.self, at: 0), try row.decode([UInt8].self, at: 1))
            }
            #expect(read.count == values.count)
            #expect(read.map(\.0) == values.map(\.0))
            #expect(read.map(\.1) == values.map(\.1))
        }
    }

    @Test func edgeCaseValuesRoundTrip() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/test.sqlite")
            try database.execute(sql: "CREATE TABLE t (value ANY) STRICT")
            let values: [DatabaseValue] = [
                .null, .integer(.min), .integer(.max), .real(-0.5), .text(""), .text("a\u{0}b"),
                .text("🙂 naïve"), .blob([]), .blob([0, 255, 0]),
            ]
            for value in values {
                try database.execute(
                    sql: "INSERT INTO t (value) VALUES (?)", arguments: StatementArguments([value]))
            }
            let read = try database.fetchAll(sql: "SELECT value FROM t ORDER BY rowid") { $0.value(at: 0) }
            #expect(read == values)
        }
    }

    @Test func typedArgumentsAndOptionalReads() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/test.sqlite")
            try database.execute(sql: "CREATE TABLE t (a INTEGER, b TEXT, c REAL, d INTEGER)")
            let missing: Int64? = nil
            let present: Int64? = 12
            try database.execute(
                sql: "INSERT INTO t VALUES (?, ?, ?, ?); INSERT INTO t VALUES (?, ?, ?, ?)",
                arguments: [Int64(1), "one", 1.5, missing, 2, "two", 2.5, present])
            let rows = try database.fetchAll(sql: "SELECT a, b, c, d FROM t ORDER BY a") { row in
                (try row.decode(Int.self, at: 0), row[1] as String?, row[2] as Double?, row[3] as Int64?)
            }
            #expect(rows.count == 2)
            #expect(rows[0] == (1, "one", 1.5, nil))
            #expect(rows[1] == (2, "two", 2.5, 12))
            #expect(database.changesCount == 1)
            #expect(database.lastInsertedRowID == 2)
        }
    }

    @Test func errorsKeepTheExtendedCodeMessageAndSQL() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/test.sqlite")
            try database.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)")
            try database.execute(sql: "INSERT INTO t VALUES (1)")
            let sql = "INSERT INTO t VALUES (?)"
            #expect {
                try database.execute(sql: sql, arguments: [1])
            } throws: { error in
                guard let error = error as? DatabaseError else { return false }
                return error.extendedResultCode == 1555  // SQLITE_CONSTRAINT_PRIMARYKEY
                    && error.resultCode == SQLITE_CONSTRAINT && error.sql == sql
                    && error.message.contains("UNIQUE constraint failed")
            }
            #expect {
                try database.execute(sql: "SELECT * FROM missing")
            } throws: { error in
                (error as? DatabaseError)?.resultCode == SQLITE_ERROR
            }
            #expect(throws: DatabaseError.self) { try database.execute(sql: sql, arguments: [1, 2]) }
            #expect(throws: DatabaseError.self) { try database.execute(sql: sql) }
            #expect(throws: DatabaseError.self) { try database.makeStatement(sql: "SELECT 1; SELECT 2") }
            #expect(throws: DatabaseError.self) { try database.makeStatement(sql: "  ") }
            #expect {
                try database.fetchOne(sql: "SELECT NULL") { try $0.decode(Int64.self, at: 0) }
            } throws: { error in
                (error as? DatabaseError)?.resultCode == SQLITE_MISMATCH
            }
        }
    }

    @Test func aFailedTransactionRollsBack() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/test.sqlite")
            try database.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)")
            #expect(throws: DatabaseError.self) {
                try database.inTransaction {
                    try database.execute(sql: "INSERT INTO t VALUES (1)")
                    try database.execute(sql: "INSERT INTO t VALUES (1)")
                }
            }
            #expect(!database.isInsideTransaction)
            #expect(
                try database.fetchOne(sql: "SELECT count(*) FROM t") { try $0.decode(Int.self, at: 0) } == 0)
        }
    }

    @Test func cachedStatementsAreReusedAndUnfinishedReadsDoNotLeak() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/test.sqlite")
            try database.execute(sql: "CREATE TABLE t (id INTEGER PRIMARY KEY)")
            try database.execute(sql: "INSERT INTO t VALUES (1), (2), (3)")
            let sql = "SELECT id FROM t ORDER BY id"
            #expect(try database.cachedStatement(sql: sql) === database.cachedStatement(sql: sql))
            // fetchOne stops after one row; the statement must be reset, not left holding a read.
            #expect(try database.fetchOne(sql: sql) { try $0.decode(Int.self, at: 0) } == 1)
            let statement = try database.cachedStatement(sql: sql)
            #expect(sqlite3_stmt_busy(statement.handle) == 0)
            #expect(try database.fetchAll(sql: sql) { try $0.decode(Int.self, at: 0) } == [1, 2, 3])
        }
    }
}
