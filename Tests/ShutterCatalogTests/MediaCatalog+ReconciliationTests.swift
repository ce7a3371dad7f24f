import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct MediaCatalogReconciliationTests {
    @Test func openRepairsOrphanFilesTemporaryFilesAndRowsWithoutFiles() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...4 { try await catalog.add(seed: seed) }
            }
            let media = "\(directory)/media"
            // A crash after the rename, before the insert.
            try writeFile("\(media)/7.jpg", fakeJPEG(seed: 7))
            // A crash inside a write, under a name that is not even an id.
            try writeFile("\(media)/.x.jpg.tmp", [0xFF, 0xD8])
            try writeFile("\(media)/.5.jpg.tmp", [0xFF])
            // A file removed behind the catalog's back.
            #expect(unlink("\(media)/2.jpg") == 0)
            // Names the catalog never writes are not its business.
            try writeFile("\(media)/notes.txt", [1])
            try writeFile("\(media)/007.jpg", [1])

            let sink = RecordingLogSink()
            let catalog = try MediaCatalog.open(
                directory, logger: Logger(label: "test", level: .warning, sink: sink))

            #expect(
                catalog.reconciliation
                    == ReconciliationReport(
                        removedTemporaryFiles: [".5.jpg.tmp", ".x.jpg.tmp"], removedOrphanFileIDs: [7],
                        removedRowIDs: [2]))
            #expect(directoryNames(media) == ["007.jpg", "1.jpg", "3.jpg", "4.jpg", "notes.txt"])
            #expect(try await catalog.record(id: 2) == nil)
            #expect(try await catalog.page(limit: 10).items.map(\.id) == [4, 3, 1])
            // 7 was seen in a file name, so it is not handed out again.
            #expect(try await catalog.add(seed: 8).id == 8)

            let lines = sink.lines
            #expect(lines.count == 4)
            #expect(lines.allSatisfy { $0.contains(" warning test: ") })
            #expect(lines.contains { $0.contains("no catalog row") && $0.hasSuffix(" id=7") })
            #expect(lines.contains { $0.contains("file is missing") && $0.hasSuffix(" id=2") })
            #expect(lines.contains { $0.hasSuffix(" file=.x.jpg.tmp") })
        }
    }

    @Test func aCleanOpenReportsNothing() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                try await catalog.add(seed: 1)
            }
            let sink = RecordingLogSink()
            let catalog = try MediaCatalog.open(
                directory, logger: Logger(label: "test", level: .trace, sink: sink))
            #expect(catalog.reconciliation.isClean)
            #expect(sink.lines.isEmpty)
            #expect(try await catalog.record(id: 1) != nil)
        }
    }

    @Test func rowsWithoutFilesAreRemovedOneByOne() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...3 { try await catalog.add(seed: seed) }
            }
            for id in 1...2 { #expect(unlink("\(directory)/media/\(id).jpg") == 0) }
            let catalog = try MediaCatalog.open(directory)
            #expect(catalog.reconciliation.removedRowIDs == [1, 2])
            #expect(try await catalog.statistics().count == 1)
            #expect(try await catalog.add(seed: 4).id == 4)
        }
    }

    @Test func anEmptiedMediaDirectoryKeepsTheCatalog() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...3 { try await catalog.add(seed: seed) }
            }
            // As if media/ were an unmounted disk: every file gone at once.
            for id in 1...3 { #expect(unlink("\(directory)/media/\(id).jpg") == 0) }
            let sink = RecordingLogSink()
            let catalog = try MediaCatalog.open(
                directory, logger: Logger(label: "test", level: .warning, sink: sink))
            #expect(catalog.reconciliation.removedRowIDs.isEmpty)
            #expect(try await catalog.statistics().count == 3)
            #expect(sink.lines.contains { $0.contains(" error test: ") && $0.contains("mounted") })
            // New pictures still get new ids.
            #expect(try await catalog.add(seed: 4).id == 4)
        }
    }

    @Test func aLaterMediaCheckRepairsTheSameAndNeverReusesALeftOverName() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...4 { try await catalog.add(seed: seed) }
            }
            let media = "\(directory)/media"
            // A crash after the rename of 5, before its insert; an unfinished write of 6.
            try writeFile("\(media)/5.jpg", fakeJPEG(seed: 5))
            try writeFile("\(media)/.6.jpg.tmp", [0xFF])
            #expect(unlink("\(media)/2.jpg") == 0)

            let catalog = try MediaCatalog(
                dataDirectory: directory, logger: quietLogger, clock: ManualClock(), checkMediaAtOpen: false)
            #expect(catalog.reconciliation.isClean, "nothing is looked at before the check starts")
            // Before the check: the names 5 and 6 are taken by leftovers, so the add skips them.
            let early = try await catalog.add(seed: 7)
            #expect(early.id == 7)
            #expect(readFile(catalog.mediaPath(id: 7)) == fakeJPEG(seed: 7))

            try await catalog.startMediaCheck()
            let report = await catalog.mediaChecked()
            #expect(
                report
                    == ReconciliationReport(
                        removedTemporaryFiles: [".6.jpg.tmp"], removedOrphanFileIDs: [5], removedRowIDs: [2]))
            #expect(directoryNames(media) == ["1.jpg", "3.jpg", "4.jpg", "7.jpg"])
            #expect(try await catalog.page(limit: 10).items.map(\.id) == [7, 4, 3, 1])
            #expect(
                try await catalog.statistics() == CatalogStatistics(count: 4, totalBytes: 1200, newestID: 7))
            #expect(try await catalog.add(seed: 8).id == 8)
        }
    }
}
