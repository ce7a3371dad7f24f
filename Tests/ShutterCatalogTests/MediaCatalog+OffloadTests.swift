import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct MediaCatalogOffloadTests {
    private static let now: Int64 = 1_700_000_000_000 + 1_000_000

    @Test func aVersion5DatabaseGainsTheColumnsWithEveryPictureLocalOnly() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...2 { try await catalog.add(seed: seed) }
            }
            do {
                let database = try Database(path: "\(directory)/catalog.sqlite")
                try database.execute(
                    sql: "ALTER TABLE media DROP COLUMN uploaded; ALTER TABLE media DROP COLUMN offloaded")
                try database.setUserVersion(5)
            }
            let catalog = try MediaCatalog.open(directory)
            let record = try #require(try await catalog.record(id: 2))
            #expect(!record.uploaded && !record.offloaded)
            #expect(record.json.hasSuffix(#""url":"/media/2.jpg","stored":["local"]}"#))
        }
    }

    @Test func offloadFreesOnlyUploadedFilesAndKeepsTheirRows() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...4 { try await catalog.add(seed: seed) }
            #expect(try await catalog.markUploaded(id: 1))
            #expect(try await catalog.markUploaded(id: 3))
            #expect(try await catalog.markUploaded(id: 3) == false)
            #expect(try await catalog.markUploaded(id: 99) == false)
            let eventsBefore = await catalog.latestEventID()
            var policy = RetentionPolicy(maxPictures: 1)
            policy.offloadsUploaded = true
            // Three must go to leave one, but 2 and 4 are not in the store: only 1 and 3 go.
            let offloaded = try await catalog.applyRetention(policy, nowWallMillis: Self.now)
            #expect(offloaded == [1, 3])
            #expect(
                access(catalog.mediaPath(id: 1), F_OK) != 0 && access(catalog.mediaPath(id: 2), F_OK) == 0)
            let record = try #require(try await catalog.record(id: 1))
            #expect(record.uploaded && record.offloaded && record.json.hasSuffix(#""stored":["s3"]}"#))
            #expect(try await catalog.record(id: 2)?.json.hasSuffix(#""stored":["local"]}"#) == true)
            #expect(try await catalog.page(before: nil, after: nil, limit: 10).items.count == 4)
            // Nothing was deleted, so nothing is announced.
            #expect(await catalog.latestEventID() == eventsBefore)
            // Once uploaded, 2 goes too; the offloaded ones no longer count towards the limit.
            #expect(try await catalog.markUploaded(id: 2))
            #expect(try await catalog.applyRetention(policy, nowWallMillis: Self.now) == [2])
            #expect(try await catalog.applyRetention(policy, nowWallMillis: Self.now) == [])
        }
    }

    @Test func anOffloadedPictureSurvivesAReopenAndItsDeleteIsAnnounced() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...2 { try await catalog.add(seed: seed) }
                try await catalog.markUploaded(id: 1)
                var policy = RetentionPolicy(maxPictures: 1)
                policy.offloadsUploaded = true
                #expect(try await catalog.applyRetention(policy, nowWallMillis: Self.now) == [1])
            }
            let catalog = try MediaCatalog.open(directory)
            // Its missing file is by design, not a crash's leftover.
            #expect(catalog.reconciliation.removedRowIDs.isEmpty)
            #expect(try await catalog.record(id: 1)?.offloaded == true)
            #expect(try await catalog.delete(id: 1))
            let last = try await catalog.events(after: 0, limit: 100).events.last
            #expect(last?.type == .pictureDeleted && last?.data.hasPrefix(#"{"id":1,"#) == true)
        }
    }
}
