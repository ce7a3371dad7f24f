import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct MediaCatalogRetentionTests {
    /// 2026-11-30T04:40:00Z, the manual clock's default wall time.
    static let now: Int64 = 1_796_013_600_000

    /// Adds `count` pictures of `bytes` bytes each, one second apart, the newest `newestAge` ms old.
    static func addPictures(
        _ catalog: MediaCatalog, count: Int, bytes: Int = 1000, newestAge: Int64 = 3_600_000
    ) async throws {
        for index in 1...count {
            let takenAt = now - newestAge - Int64(count - index) * 1000
            try await catalog.add(
                jpeg: fakeJPEG(seed: index, count: bytes), takenAt: takenAt, width: 640, height: 480,
                source: "test-camera")
        }
    }

    static func remainingIDs(_ catalog: MediaCatalog) async throws -> [Int64] {
        try await catalog.page(after: 0, limit: 1000).items.map(\.id)
    }

    @Test func countLimitRemovesTheOldestRowsAndFiles() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            try await Self.addPictures(catalog, count: 10)
            let counter = catalog.changeCounter
            let removed = try await catalog.applyRetention(
                RetentionPolicy(maxPictures: 4), nowWallMillis: Self.now)
            #expect(removed == [1, 2, 3, 4, 5, 6])
            #expect(try await Self.remainingIDs(catalog) == [7, 8, 9, 10])
            #expect(directoryNames("\(directory)/media") == ["10.jpg", "7.jpg", "8.jpg", "9.jpg"])
            #expect(
                try await catalog.statistics() == CatalogStatistics(count: 4, totalBytes: 4000, newestID: 10))
            #expect(catalog.changeCounter > counter)
            #expect(
                try await catalog.applyRetention(RetentionPolicy(maxPictures: 4), nowWallMillis: Self.now)
                    == [])
        }
    }

    @Test func byteLimitRemovesUntilTheTotalFits() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            try await Self.addPictures(catalog, count: 10)
            let removed = try await catalog.applyRetention(
                RetentionPolicy(maxBytes: 3500), nowWallMillis: Self.now)
            #expect(removed == [1, 2, 3, 4, 5, 6, 7])
            #expect(try await catalog.statistics().totalBytes == 3000)
            #expect(directoryNames("\(directory)/media") == ["10.jpg", "8.jpg", "9.jpg"])
        }
    }

    @Test func ageLimitRemovesPicturesTakenBeforeTheCutoff() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            // Taken 10 s, 9 s, ..., 1 s ago.
            try await Self.addPictures(catalog, count: 10, newestAge: 1000)
            let removed = try await catalog.applyRetention(
                RetentionPolicy(maxAgeMilliseconds: 5500), nowWallMillis: Self.now)
            #expect(removed == [1, 2, 3, 4, 5])
            #expect(try await Self.remainingIDs(catalog) == [6, 7, 8, 9, 10])
            #expect(!fileExists(catalog.mediaPath(id: 5)))
            #expect(fileExists(catalog.mediaPath(id: 6)))
        }
    }

    @Test func combinedLimitsRemoveWhatAnyOfThemRequires() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            try await Self.addPictures(catalog, count: 10, newestAge: 1000)
            // The age limit alone removes 1 and 2, the count limit alone 1...4, the bytes limit 1...6.
            let removed = try await catalog.applyRetention(
                RetentionPolicy(maxPictures: 6, maxBytes: 4000, maxAgeMilliseconds: 8500),
                nowWallMillis: Self.now)
            #expect(removed == [1, 2, 3, 4, 5, 6])
            let again = try MediaCatalog.open("\(directory)/other")
            try await Self.addPictures(again, count: 10, newestAge: 1000)
            let byAgeAndCount = try await again.applyRetention(
                RetentionPolicy(maxPictures: 9, maxAgeMilliseconds: 8500), nowWallMillis: Self.now)
            #expect(byAgeAndCount == [1, 2])
        }
    }

    @Test func keptPicturesCountButAreNeverRemoved() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            try await Self.addPictures(catalog, count: 6)
            _ = try await catalog.setKeep(id: 1, keep: true)
            _ = try await catalog.setKeep(id: 2, keep: true)
            let removed = try await catalog.applyRetention(
                RetentionPolicy(maxPictures: 3, maxAgeMilliseconds: 1), nowWallMillis: Self.now)
            #expect(removed == [3, 4, 5, 6])
            #expect(try await Self.remainingIDs(catalog) == [1, 2])
            #expect(fileExists(catalog.mediaPath(id: 1)))
        }
    }

    @Test func picturesYoungerThanTheMinimumAgeStay() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            // Taken 6 s, 5 s, ..., 1 s ago; the minimum age protects the newest three.
            try await Self.addPictures(catalog, count: 6, newestAge: 1000)
            let policy = RetentionPolicy(
                maxPictures: 1, maxBytes: 0, maxAgeMilliseconds: 0, minimumAgeMilliseconds: 3500)
            let removed = try await catalog.applyRetention(policy, nowWallMillis: Self.now)
            #expect(removed == [1, 2, 3])
            #expect(try await Self.remainingIDs(catalog) == [4, 5, 6])
        }
    }

    @Test func noLimitRemovesNothing() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            try await Self.addPictures(catalog, count: 3)
            #expect(try await catalog.applyRetention(RetentionPolicy(), nowWallMillis: Self.now) == [])
            #expect(try await catalog.statistics().count == 3)
        }
    }

    @Test func retentionRunsAfterEachAdd() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try MediaCatalog(
                dataDirectory: directory, logger: quietLogger,
                retention: RetentionPolicy(maxPictures: 3, minimumAgeMilliseconds: 60_000), clock: clock)
            // Taken now: too young to remove, so the library may grow past the limit for a while.
            for seed in 1...5 {
                try await catalog.add(
                    jpeg: fakeJPEG(seed: seed), takenAt: clock.wallMillisecondsNow(), width: 640, height: 480,
                    source: "test-camera")
            }
            #expect(try await catalog.statistics().count == 5)
            clock.advance(by: 61_000_000_000)
            try await catalog.add(
                jpeg: fakeJPEG(seed: 6), takenAt: clock.wallMillisecondsNow(), width: 640, height: 480,
                source: "test-camera")
            #expect(try await Self.remainingIDs(catalog) == [4, 5, 6])
            #expect(directoryNames("\(directory)/media") == ["4.jpg", "5.jpg", "6.jpg"])
            #expect(try await catalog.statistics().totalBytes == 900)
        }
    }

    @Test func aLargeExcessGoesInPassesWithOtherWorkBetweenThem() async throws {
        try await withTemporaryDirectory { directory in
            let sink = RecordingLogSink()
            let catalog = try MediaCatalog(
                dataDirectory: directory, logger: Logger(label: "test", level: .info, sink: sink),
                clock: ManualClock())
            try await Self.addPictures(catalog, count: 9)
            await catalog.setRetentionPassSize(2)
            await catalog.setRetention(RetentionPolicy(maxPictures: 3))
            // The picture ids of each committed batch of events, in order.
            let batches = LockedValue<[[Int64]]>([])
            let subscription = catalog.eventFeed.subscribe { batch in
                let ids = batch.compactMap { event in
                    event.data.split(separator: ",").first.flatMap { Int64($0.dropFirst("{\"id\":".count)) }
                }
                batches.withLock { $0.append(ids) }
            }
            // The tenth picture makes seven too many: this add removes one pass of two only.
            try await catalog.add(
                jpeg: fakeJPEG(seed: 10, count: 1000), takenAt: Self.now - 60_000, width: 640, height: 480,
                source: "test-camera")
            // The rest goes in passes queued on the catalog's thread, one transaction each (one
            // batch of events each), so work that arrives meanwhile (snaps, in the daemon) is taken
            // between passes. The last call, queued after the last pass, sees them all done.
            for _ in 0..<10_000 where try await catalog.statistics().count > 3 { await Task.yield() }
            #expect(try await Self.remainingIDs(catalog) == [8, 9, 10])
            #expect(batches.withLock { $0 } == [[10], [1, 2], [3, 4], [5, 6], [7]])
            subscription.cancel()
            #expect(
                try await catalog.statistics() == CatalogStatistics(count: 3, totalBytes: 3000, newestID: 10))
            #expect(directoryNames("\(directory)/media") == ["10.jpg", "8.jpg", "9.jpg"])
            let logged = sink.lines.filter { $0.contains("retention removed pictures") }
            #expect(logged.count == 1)
            #expect(logged.first?.contains("count=7 first_id=1 last_id=7") == true)
            #expect(logged.first?.contains("passes=4") == true)
        }
    }

    @Test func totalsSurviveReopenAndDelete() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                try await Self.addPictures(catalog, count: 5)
            }
            let catalog = try MediaCatalog(
                dataDirectory: directory, logger: quietLogger, retention: RetentionPolicy(maxBytes: 3000),
                clock: ManualClock())
            #expect(try await catalog.delete(id: 5))
            // 4000 bytes after the delete; this add makes 5000, so two must go.
            try await catalog.add(
                jpeg: fakeJPEG(seed: 9, count: 1000), takenAt: Self.now - 120_000, width: 640, height: 480,
                source: "test-camera")
            #expect(try await Self.remainingIDs(catalog) == [3, 4, 6])
        }
    }

    @Test func freeSpaceFloorRefusesAndWritesNothing() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog(
                dataDirectory: directory, logger: quietLogger, minimumFreeBytes: Int64.max / 2)
            let counter = catalog.changeCounter
            do {
                try await catalog.add(seed: 1)
                Issue.record("an add below the floor succeeded")
            } catch CatalogError.storageFull(let error) {
                #expect(error.errno == ENOSPC)
                #expect(error.call.contains("floor"))
            }
            #expect(directoryNames("\(directory)/media") == [])
            #expect(try await catalog.statistics().count == 0)
            #expect(catalog.changeCounter == counter)

            await catalog.setMinimumFreeBytes(1)
            let record = try await catalog.add(seed: 2)
            #expect(readFile(catalog.mediaPath(id: record.id)) == fakeJPEG(seed: 2))
        }
    }

    @Test func oldestFirstQueryWalksTheUnkeptIndexWithoutSorting() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for offload in [false, true] {
                let plan = try await catalog.queryPlan(
                    MediaCatalog.oldestSQL(offload: offload), arguments: [Int64(0), Int64(1), Int64(10)])
                #expect(plan.contains("USING INDEX media_unkept"), "\(plan)")
                #expect(!plan.contains("TEMP B-TREE"), "\(plan)")
            }
        }
    }

    @Test func manyKeptPicturesDoNotHideTheOldestRemovable() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            try await Self.addPictures(catalog, count: 300, bytes: 100)
            for id in Int64(1)...260 { _ = try await catalog.setKeep(id: id, keep: true) }
            let removed = try await catalog.applyRetention(
                RetentionPolicy(maxPictures: 280), nowWallMillis: Self.now)
            #expect(removed == Array(261...280))
        }
    }

    @Test func ageQueryUsesTheRetentionIndex() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for offload in [false, true] {
                let plan = try await catalog.queryPlan(
                    MediaCatalog.expiredSQL(offload: offload), arguments: [Int64(1), Int64(1), Int64(500)])
                #expect(plan.contains("USING INDEX media_retention"), "\(plan)")
            }
        }
    }
}

extension MediaCatalog {
    /// The `EXPLAIN QUERY PLAN` details of `sql` with `arguments`, joined.
    fileprivate func queryPlan(_ sql: String, arguments: StatementArguments) throws -> String {
        try database.fetchAll(sql: "EXPLAIN QUERY PLAN " + sql, arguments: arguments) {
            try $0.decode(String.self, at: 3)
        }
        .joined(separator: "; ")
    }
}
