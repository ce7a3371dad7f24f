import ShutterTestSupport
import Testing

@testable import ShutterCatalog

@Suite struct CatalogSchemaTests {
    @Test func migrationSetsTheUserVersionAndIsIdempotent() async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/catalog.sqlite")
            #expect(try database.userVersion() == 0)
            try CatalogSchema.migrate(database)
            #expect(try database.userVersion() == CatalogSchema.latestVersion)
            #expect(CatalogSchema.latestVersion == 7)
            try CatalogSchema.migrate(database)
            let columns = try database.fetchAll(
                sql: "SELECT name, \"notnull\" FROM pragma_table_info('media')"
            ) {
                "\(try $0.decode(String.self, at: 0)):\(try $0.decode(Int.self, at: 1))"
            }
            #expect(
                columns == [
                    "id:0", "taken_at:1", "width:1", "height:1", "bytes:1", "sha256:1", "source:1",
                    "job_id:0",
                    "keep:1", "label:0", "uploaded:1", "offloaded:1",
                ])
        }
    }

    /// `/library`'s time and keep filters, alone, together, with the other filters and with the
    /// cursors: each reads an index and walks rows in id order. No sort, and no scan of the table
    /// (a scan of a partial index holding only the kept or unkept pictures, in id order, stops
    /// after a page); the time range's two lookups read media_taken_at alone.
    @Test(arguments: [
        // (since, until, keep, job, label)
        (true, false, false, false, false), (false, true, false, false, false),
        (true, true, false, false, false),
        (false, false, true, false, false), (true, true, true, false, false),
        (true, false, false, true, false),
        (false, true, false, false, true), (false, false, true, true, true), (true, true, true, true, true),
    ])
    func filteredPageQueriesUseIndexesInKeyOrder(
        since: Bool, until: Bool, keep: Bool, job: Bool, label: Bool
    ) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/catalog.sqlite")
            try CatalogSchema.migrate(database)
            // As every open does: retention's indexes, media_unkept among them.
            try MediaCatalog.createRetentionIndex(database)
            let cursors: [(Int64?, Int64?)] = [(nil, nil), (9, nil), (nil, 3), (9, 3)]
            for (before, after) in cursors {
                for keepValue in keep ? [true, false] : [nil] {
                    let (sql, arguments) = MediaCatalog.pageQuery(
                        before: before, after: after, rows: 51, jobID: job ? 7 : nil,
                        label: label ? "door" : nil,
                        keep: keepValue, takenSince: since ? 1_000 : nil, takenUntil: until ? 2_000 : nil)
                    let plan = try database.fetchAll(sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments) {
                        try $0.decode(String.self, at: 3)
                    }
                    let described = plan.joined(separator: "; ")
                    #expect(!described.contains("TEMP B-TREE"), "sorts: \(described)")
                    let partial = [
                        "SCAN media USING INDEX media_kept", "SCAN media USING INDEX media_unkept",
                    ]
                    #expect(
                        !plan.contains { $0.hasPrefix("SCAN media") && !partial.contains($0) },
                        "scans: \(described)")
                    if since || until {
                        #expect(described.contains("COVERING INDEX media_taken_at (taken_at"), "\(described)")
                    }
                    if let keepValue, !job, !label, !(since || until) {
                        let index = keepValue ? "media_kept" : "media_unkept"
                        #expect(described.contains("USING INDEX \(index)"), "\(described)")
                    }
                }
            }
        }
    }

    @Test func aDatabaseFromANewerVersionIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let database = try Database(path: "\(directory)/catalog.sqlite")
                try database.setUserVersion(CatalogSchema.latestVersion + 1)
            }
            #expect(
                throws: CatalogError.unsupportedSchemaVersion(
                    found: CatalogSchema.latestVersion + 1, supported: CatalogSchema.latestVersion)
            ) {
                try MediaCatalog.open(directory)
            }
        }
    }

    /// Every page query walks an index in id order: no full sort, no full scan behind a filter.
    @Test(arguments: [
        ([String](), false), (["id < ?"], false), (["id > ?"], true), (["id > ?", "id < ?"], true),
        (["job_id = ?"], false), (["id < ?", "job_id = ?"], false), (["id > ?", "job_id = ?"], true),
        (["id > ?", "id < ?", "job_id = ?"], true), (["label = ?"], false), (["id < ?", "label = ?"], false),
        (["id > ?", "label = ?"], true), (["id > ?", "id < ?", "label = ?"], true),
    ])
    func pageQueriesUseTheKeyOrder(conditions: [String], ascending: Bool) async throws {
        try await withTemporaryDirectory { directory in
            let database = try Database(path: "\(directory)/catalog.sqlite")
            try CatalogSchema.migrate(database)
            let sql = MediaCatalog.pageSQL(conditions: conditions, ascending: ascending)
            let arguments = StatementArguments(Array(repeating: .integer(1), count: conditions.count + 1))
            let plan = try database.fetchAll(sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments) {
                try $0.decode(String.self, at: 3)
            }.joined(separator: "; ")
            #expect(!plan.contains("TEMP B-TREE"), "sorts: \(plan)")
            if conditions.contains("job_id = ?") {
                #expect(plan.contains("USING INDEX media_job_id (job_id=?"), "\(plan)")
            } else if conditions.contains("label = ?") {
                #expect(plan.contains("USING INDEX media_label (label=?"), "\(plan)")
            } else if !conditions.isEmpty {
                #expect(plan.contains("USING INTEGER PRIMARY KEY (rowid"), "\(plan)")
            } else {
                #expect(plan == "SCAN media", "\(plan)")
            }
        }
    }
}
