import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

@Suite struct CatalogReaderTests {
    private static func page(
        _ reader: CatalogReader, before: Int64? = nil, after: Int64? = nil, limit: Int = 50,
        label: String? = nil
    ) async -> Result<MediaPage, CatalogError> {
        await withCheckedContinuation { continuation in
            reader.page(before: before, after: after, limit: limit, label: label) {
                continuation.resume(returning: $0)
            }
        }
    }

    /// The reader's pages are the catalog's, filters and cursors included, and each read sees
    /// what the catalog committed before it started.
    @Test func readsTheSamePagesAsTheCatalogAndEveryCommitBeforeTheRead() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...5 { try await catalog.add(seed: seed, label: seed % 2 == 0 ? "even" : nil) }
            let cases: [(Int64?, Int64?, Int, String?)] = [
                (nil, nil, 50, nil), (4, nil, 2, nil), (nil, 1, 3, nil), (nil, nil, 50, "even"),
            ]
            for (before, after, limit, label) in cases {
                let expected = try await catalog.page(
                    before: before, after: after, limit: limit, label: label)
                let read = try await Self.page(
                    catalog.reader, before: before, after: after, limit: limit, label: label
                ).get()
                #expect(read == expected)
            }
            try await catalog.add(seed: 6)
            #expect(try await Self.page(catalog.reader).get().items.first?.id == 6)
            _ = try await catalog.delete(id: 6)
            #expect(try await Self.page(catalog.reader).get().items.first?.id == 5)
        }
    }

    /// Many pages at once over two lanes: each answer is the page asked for, whichever lane read it.
    @Test func pagesReadAtOnceOverTwoLanesAreEachThePageAskedFor() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...40 { try await catalog.add(seed: seed) }
            let reader = try CatalogReader(path: "\(directory)/catalog.sqlite", lanes: 2)
            try await withThrowingTaskGroup(of: (Int64, [Int64]).self) { group in
                for before in Int64(2)...41 {
                    group.addTask {
                        (before, try await Self.page(reader, before: before, limit: 3).get().items.map(\.id))
                    }
                }
                for try await (before, ids) in group {
                    #expect(ids == Array((max(1, before - 3)..<before).reversed()), "before \(before)")
                }
            }
        }
    }

    @Test func aBadArgumentIsTheCatalogsError() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            guard case .failure(let error) = await Self.page(catalog.reader, limit: 0) else {
                Issue.record("a page of 0 was read")
                return
            }
            #expect(error == CatalogError.invalidArgument("limit 0 is below 1"))
        }
    }

    /// WAL: the reader reads while the catalog's connection holds a write transaction open,
    /// and sees the state from before it.
    @Test func aReadDoesNotWaitForAWriteInProgress() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            try await catalog.add(seed: 1)
            let writer = try Database(path: "\(directory)/catalog.sqlite")
            try writer.execute(sql: "BEGIN IMMEDIATE")
            try writer.execute(sql: "UPDATE media SET label = 'uncommitted' WHERE id = 1")
            let read = try await Self.page(catalog.reader).get()
            #expect(read.items.map(\.label) == [nil])
            try writer.execute(sql: "COMMIT")
            #expect(try await Self.page(catalog.reader).get().items.map(\.label) == ["uncommitted"])
        }
    }
}
