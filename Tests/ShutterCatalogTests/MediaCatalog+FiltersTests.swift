import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

/// `/library`'s `since`, `until` and `keep` filters, on a real SQLite file: the rows they keep,
/// alone, together and with the id cursors, and the plans SQLite runs them with.
@Suite struct MediaCatalogFiltersTests {
    /// 2026-12-02T10:00:00Z in wall milliseconds.
    static let ten: Int64 = 1_796_205_600_000

    /// Adds a picture taken `offset` milliseconds after `ten`.
    @discardableResult
    static func add(
        _ catalog: MediaCatalog, at offset: Int64, jobID: Int64? = nil, label: String? = nil
    ) async throws -> MediaRecord {
        try await catalog.add(
            jpeg: fakeJPEG(seed: Int(offset)), takenAt: ten + offset, width: 640, height: 480,
            source: "test-camera", jobID: jobID, label: label)
    }

    @Test func sinceIsInclusiveAndUntilExclusive() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for offset in [-1, 0, 1, 999, 1000, 1001] { try await Self.add(catalog, at: Int64(offset)) }
            let between = try await catalog.page(limit: 50, takenSince: Self.ten, takenUntil: Self.ten + 1000)
            #expect(between.items.map { $0.takenAt - Self.ten } == [999, 1, 0])
            let since = try await catalog.page(limit: 50, takenSince: Self.ten + 1000)
            #expect(since.items.map { $0.takenAt - Self.ten } == [1001, 1000])
            let until = try await catalog.page(limit: 50, takenUntil: Self.ten)
            #expect(until.items.map { $0.takenAt - Self.ten } == [-1])
            let none = try await catalog.page(limit: 50, takenSince: Self.ten + 5000)
            #expect(none.items.isEmpty && !none.hasMore)
        }
    }

    /// Ids and times disagree when a clock is set back: the listing stays in id order, and keeps
    /// exactly the pictures taken in the range, wherever their ids are.
    @Test func aClockSetBackStillListsExactlyTheRangeInIDOrder() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            // ids 1...6, taken at these offsets: the clock jumped back an hour after id 3.
            for offset: Int64 in [0, 10, 20, -3_600_000, 5, 15] { try await Self.add(catalog, at: offset) }
            let range = try await catalog.page(limit: 50, takenSince: Self.ten + 5, takenUntil: Self.ten + 20)
            #expect(range.items.map(\.id) == [6, 5, 2])
            let forward = try await catalog.page(
                after: 0, limit: 2, takenSince: Self.ten + 5, takenUntil: Self.ten + 20)
            #expect(forward.items.map(\.id) == [2, 5] && forward.hasMore)
            let rest = try await catalog.page(
                after: 5, limit: 2, takenSince: Self.ten + 5, takenUntil: Self.ten + 20)
            #expect(rest.items.map(\.id) == [6] && !rest.hasMore)
            let early = try await catalog.page(limit: 50, takenUntil: Self.ten)
            #expect(early.items.map(\.id) == [4])
        }
    }

    @Test func keepFiltersAndCombinesWithTimeCursorsJobAndLabel() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for offset in 0..<10 {
                try await Self.add(
                    catalog, at: Int64(offset) * 1000, jobID: offset % 2 == 0 ? 7 : nil,
                    label: offset < 5 ? "door" : nil)
            }
            for id: Int64 in [2, 3, 4, 8] { _ = try await catalog.setKeep(id: id, keep: true) }
            #expect(try await catalog.page(limit: 50, keep: true).items.map(\.id) == [8, 4, 3, 2])
            #expect(try await catalog.page(limit: 50, keep: false).items.map(\.id) == [10, 9, 7, 6, 5, 1])
            // Pages of two through the kept pictures, newest first, then forward.
            let first = try await catalog.page(limit: 2, keep: true)
            #expect(first.items.map(\.id) == [8, 4] && first.hasMore)
            let second = try await catalog.page(before: 4, limit: 2, keep: true)
            #expect(second.items.map(\.id) == [3, 2] && !second.hasMore)
            #expect(try await catalog.page(after: 2, limit: 50, keep: true).items.map(\.id) == [3, 4, 8])
            // Everything at once: kept, of job 7, labelled door, taken from 1 s to before 9 s, below id 9.
            let all = try await catalog.page(
                before: 9, limit: 50, jobID: 7, label: "door", keep: true, takenSince: Self.ten + 1000,
                takenUntil: Self.ten + 9000)
            #expect(all.items.map(\.id) == [3])
            let unkeptJob = try await catalog.page(
                after: 0, limit: 50, jobID: 7, keep: false, takenSince: Self.ten + 4000)
            #expect(unkeptJob.items.map(\.id) == [5, 7, 9])
        }
    }

    /// A database of version 4 gets the filters' indexes, and its pictures are found by them.
    @Test func aVersionFourDatabaseGainsTheFilterIndexes() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                try await Self.add(catalog, at: 0)
                _ = try await catalog.setKeep(id: 1, keep: true)
            }
            // Turn the file back into what version 4 wrote.
            do {
                let database = try Database(path: "\(directory)/catalog.sqlite")
                try database.execute(
                    sql:
                        "DROP INDEX media_taken_at; DROP INDEX media_kept; DROP TABLE events; DROP TABLE sink_cursors; "
                        + "ALTER TABLE media DROP COLUMN uploaded; ALTER TABLE media DROP COLUMN offloaded"
                )
                try database.setUserVersion(4)
            }
            let catalog = try MediaCatalog.open(directory)
            #expect(catalog.reconciliation.isClean)
            let indexes = try await catalog.indexNames()
            #expect(indexes.contains("media_taken_at") && indexes.contains("media_kept"))
            #expect(try await catalog.page(limit: 5, keep: true, takenSince: Self.ten).items.map(\.id) == [1])
        }
    }
}

extension MediaCatalog {
    /// The names of the media table's indexes.
    func indexNames() throws -> [String] {
        try database.fetchAll(sql: "SELECT name FROM pragma_index_list('media')") {
            try $0.decode(String.self, at: 0)
        }
    }
}
