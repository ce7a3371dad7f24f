import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct MediaCatalogTests {
    @Test func addThenRecordRoundTripsWithChecksumAndFile() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let jpeg = fakeJPEG(seed: 7, count: 5000)
            let added = try await catalog.add(
                jpeg: jpeg, takenAt: 1_733_000_000_123, width: 1920, height: 1080, source: "front door")

            #expect(added.id == 1)
            #expect(added.takenAt == 1_733_000_000_123)
            #expect(added.width == 1920)
            #expect(added.height == 1080)
            #expect(added.bytes == 5000)
            #expect(added.sha256 == SHA256.hexDigest(jpeg))
            #expect(added.sha256.count == 64)
            #expect(added.source == "front door")
            #expect(added.jobID == nil)
            #expect(added.keep == false)
            #expect(try await catalog.record(id: added.id) == added)
            #expect(catalog.mediaPath(id: added.id) == "\(directory)/media/1.jpg")
            #expect(readFile(catalog.mediaPath(id: added.id)) == jpeg)
            #expect(directoryNames("\(directory)/media") == ["1.jpg"])
        }
    }

    @Test func recordOfUnknownIDIsNil() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            #expect(try await catalog.record(id: 1) == nil)
            try await catalog.add(seed: 1)
            #expect(try await catalog.record(id: 2) == nil)
            #expect(try await catalog.record(id: -1) == nil)
        }
    }

    @Test func jobIDIsStoredAndFiltersPages() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...10 {
                try await catalog.add(seed: seed, jobID: seed.isMultiple(of: 2) ? 42 : nil)
            }
            #expect(try await catalog.record(id: 2)?.jobID == 42)
            #expect(try await catalog.record(id: 3)?.jobID == nil)

            let newest = try await catalog.page(limit: 3, jobID: 42)
            #expect(newest.items.map(\.id) == [10, 8, 6])
            #expect(newest.hasMore)
            let rest = try await catalog.page(before: 6, limit: 3, jobID: 42)
            #expect(rest.items.map(\.id) == [4, 2])
            #expect(!rest.hasMore)
            let newer = try await catalog.page(after: 4, limit: 10, jobID: 42)
            #expect(newer.items.map(\.id) == [6, 8, 10])
            #expect(try await catalog.page(limit: 10, jobID: 7).items.isEmpty)
        }
    }

    @Test func labelIsStoredAndFiltersPagesAlongTheCursors() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...10 {
                try await catalog.add(seed: seed, label: seed.isMultiple(of: 3) ? "front door" : nil)
            }
            #expect(try await catalog.record(id: 3)?.label == "front door")
            #expect(try await catalog.record(id: 4)?.label == nil)
            let newest = try await catalog.page(limit: 2, label: "front door")
            #expect(newest.items.map(\.id) == [9, 6])
            #expect(newest.hasMore)
            let rest = try await catalog.page(before: 6, limit: 2, label: "front door")
            #expect(rest.items.map(\.id) == [3])
            #expect(!rest.hasMore)
            #expect(
                try await catalog.page(after: 3, limit: 10, label: "front door").items.map(\.id) == [6, 9])
            #expect(try await catalog.page(limit: 10, label: "Front door").items.isEmpty)
        }
    }

    @Test func invalidPicturesAreRejectedWithoutUsingStorage() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            await #expect(throws: CatalogError.invalidArgument("jpeg is empty")) {
                try await catalog.add(jpeg: [], takenAt: 0, width: 1, height: 1, source: "camera")
            }
            await #expect(throws: CatalogError.self) {
                try await catalog.add(jpeg: [1], takenAt: 0, width: 0, height: 1, source: "camera")
            }
            #expect(directoryNames("\(directory)/media").isEmpty)
            #expect(try await catalog.statistics().count == 0)
        }
    }

    @Test func idsIncreaseAndAreNeverReusedEvenAfterDeletingTheNewest() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                let ids = [
                    try await catalog.add(seed: 1).id, try await catalog.add(seed: 2).id,
                    try await catalog.add(seed: 3).id,
                ]
                #expect(ids == [1, 2, 3])
                #expect(try await catalog.delete(id: 3))
                #expect(try await catalog.add(seed: 4).id == 4)
                #expect(try await catalog.delete(id: 4))
            }
            // The newest row is gone, and only sqlite_sequence remembers 4.
            do {
                let catalog = try MediaCatalog.open(directory)
                #expect(try await catalog.statistics().newestID == 2)
                #expect(try await catalog.add(seed: 5).id == 5)
                #expect(try await catalog.delete(id: 5))
            }
            do {
                let catalog = try MediaCatalog.open(directory)
                #expect(try await catalog.add(seed: 6).id == 6)
            }
        }
    }

    @Test func idsSkipPastAFileLeftWithoutARow() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                try await catalog.add(seed: 1)
            }
            // A crash between rename and insert: sqlite_sequence never saw id 9.
            try writeFile("\(directory)/media/9.jpg", fakeJPEG(seed: 9))
            let catalog = try MediaCatalog.open(directory)
            #expect(catalog.reconciliation.removedOrphanFileIDs == [9])
            #expect(try await catalog.add(seed: 2).id == 10)
        }
    }

    @Test func aFailedWriteStoresNothingAndKeepsEverythingElse() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let first = try await catalog.add(seed: 1)
            let counter = catalog.changeCounter
            // Something already holds the temporary name of id 2, so O_EXCL fails.
            try writeFile("\(directory)/media/.2.jpg.tmp", [1, 2, 3])

            await #expect {
                try await catalog.add(seed: 2)
            } throws: { error in
                guard case .io(let systemError) = error as? CatalogError else { return false }
                return systemError.errno == EEXIST
            }
            #expect(directoryNames("\(directory)/media") == [".2.jpg.tmp", "1.jpg"])
            #expect(readFile("\(directory)/media/.2.jpg.tmp") == [1, 2, 3])
            #expect(
                try await catalog.statistics() == CatalogStatistics(count: 1, totalBytes: 300, newestID: 1))
            #expect(catalog.changeCounter == counter)
            #expect(try await catalog.record(id: 1) == first)
            #expect(try await catalog.add(seed: 3).id == 3)
        }
    }

    @Test func pagesNewestFirstWithoutGapsOrDuplicates() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...120 { try await catalog.add(seed: seed) }

            let first = try await catalog.page(limit: 50)
            let second = try await catalog.page(before: first.items.last!.id, limit: 50)
            let third = try await catalog.page(before: second.items.last!.id, limit: 50)

            #expect(first.items.count == 50)
            #expect(second.items.count == 50)
            #expect(third.items.count == 20)
            #expect([first.hasMore, second.hasMore, third.hasMore] == [true, true, false])
            let ids = (first.items + second.items + third.items).map(\.id)
            #expect(ids == Array((1...120).reversed()))
            #expect(first.items.first == (try await catalog.record(id: 120)))
        }
    }

    @Test func pageAfterReturnsNewerPicturesInTheOrderTaken() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...12 { try await catalog.add(seed: seed) }

            let page = try await catalog.page(after: 5, limit: 4)
            #expect(page.items.map(\.id) == [6, 7, 8, 9])
            #expect(page.hasMore)
            let next = try await catalog.page(after: 9, limit: 4)
            #expect(next.items.map(\.id) == [10, 11, 12])
            #expect(!next.hasMore)
            let exact = try await catalog.page(after: 8, limit: 4)
            #expect(exact.items.map(\.id) == [9, 10, 11, 12])
            #expect(!exact.hasMore)
            let nothingNew = try await catalog.page(after: 12, limit: 4)
            #expect(nothingNew.items.isEmpty)
            #expect(!nothingNew.hasMore)
            #expect(try await catalog.page(after: 0, limit: 100).items.map(\.id) == Array(1...12))
        }
    }

    @Test func pageBetweenBeforeAndAfterIsAscendingAndExclusive() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...20 { try await catalog.add(seed: seed) }

            let page = try await catalog.page(before: 15, after: 5, limit: 4)
            #expect(page.items.map(\.id) == [6, 7, 8, 9])
            #expect(page.hasMore)
            let rest = try await catalog.page(before: 15, after: 9, limit: 10)
            #expect(rest.items.map(\.id) == [10, 11, 12, 13, 14])
            #expect(!rest.hasMore)
            #expect(try await catalog.page(before: 6, after: 5, limit: 10).items.isEmpty)
            #expect(try await catalog.page(before: 5, after: 10, limit: 10).items.isEmpty)
        }
    }

    @Test func pageSkipsDeletedPictures() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...6 { try await catalog.add(seed: seed) }
            #expect(try await catalog.delete(id: 5))
            #expect(try await catalog.delete(id: 2))
            #expect(try await catalog.page(limit: 3).items.map(\.id) == [6, 4, 3])
            #expect(try await catalog.page(before: 3, limit: 3).items.map(\.id) == [1])
        }
    }

    @Test(arguments: [0, -1, Int.min])
    func pageRejectsALimitBelowOne(limit: Int) async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            await #expect(throws: CatalogError.invalidArgument("limit \(limit) is below 1")) {
                try await catalog.page(limit: limit)
            }
        }
    }

    @Test func aHugeLimitReturnsEverythingWithoutOverflow() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...3 { try await catalog.add(seed: seed) }
            let page = try await catalog.page(limit: Int.max)
            #expect(page.items.map(\.id) == [3, 2, 1])
            #expect(!page.hasMore)
        }
    }

    @Test func thumbnailsAreServedFromTheirOwnDirectoryAndGoWithTheirPicture() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let picture = try await catalog.add(seed: 1)
            let neighbour = try await catalog.add(seed: 11)
            #expect(catalog.thumbnailPath(id: 1, width: 320) == "\(directory)/media/thumbs/1-320.jpg")
            try await catalog.storeThumbnail(fakeJPEG(seed: 2), id: picture.id, width: 320)
            try await catalog.storeThumbnail(fakeJPEG(seed: 3), id: picture.id, width: 160)
            try await catalog.storeThumbnail(fakeJPEG(seed: 4), id: neighbour.id, width: 320)
            #expect(readFile(catalog.thumbnailPath(id: picture.id, width: 320)) == fakeJPEG(seed: 2))
            // A second store replaces the first whole.
            try await catalog.storeThumbnail(fakeJPEG(seed: 5), id: picture.id, width: 320)
            #expect(readFile(catalog.thumbnailPath(id: picture.id, width: 320)) == fakeJPEG(seed: 5))

            #expect(try await catalog.delete(id: picture.id))
            #expect(!fileExists(catalog.thumbnailPath(id: picture.id, width: 320)))
            #expect(!fileExists(catalog.thumbnailPath(id: picture.id, width: 160)))
            // `1-` must not match the thumbnails of 11.
            #expect(fileExists(catalog.thumbnailPath(id: neighbour.id, width: 320)))
        }
    }

    @Test func thumbnailsAreNeitherListedNorReconciledAsPictures() async throws {
        try await withTemporaryDirectory { directory in
            let picture: MediaRecord
            do {
                let catalog = try MediaCatalog.open(directory)
                picture = try await catalog.add(seed: 1)
                try await catalog.storeThumbnail(fakeJPEG(seed: 2), id: picture.id, width: 320)
            }
            // Names in thumbs/ that would be media or leftovers if they were one level up.
            try writeFile("\(directory)/media/thumbs/7.jpg", fakeJPEG(seed: 3))
            try writeFile("\(directory)/media/thumbs/.8.jpg.tmp", fakeJPEG(seed: 4))
            let listing = try MediaDirectory(path: "\(directory)/media").listing()
            #expect(listing.mediaIDs == [picture.id])
            #expect(listing.temporaryFiles.isEmpty)
            #expect(listing.largestID == picture.id)

            let reopened = try MediaCatalog.open(directory)
            #expect(reopened.reconciliation.removedOrphanFileIDs.isEmpty)
            #expect(reopened.reconciliation.removedTemporaryFiles.isEmpty)
            #expect(fileExists(reopened.thumbnailPath(id: picture.id, width: 320)))
            #expect(try await reopened.page(limit: 10).items.map(\.id) == [picture.id])
        }
    }

    @Test func deleteRemovesRowAndFile() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let kept = try await catalog.add(seed: 1)
            let deleted = try await catalog.add(seed: 2)
            #expect(fileExists(catalog.mediaPath(id: deleted.id)))

            #expect(try await catalog.delete(id: deleted.id))
            #expect(try await catalog.record(id: deleted.id) == nil)
            #expect(!fileExists(catalog.mediaPath(id: deleted.id)))
            #expect(try await catalog.record(id: kept.id) == kept)
            #expect(fileExists(catalog.mediaPath(id: kept.id)))
            #expect(try await catalog.delete(id: deleted.id) == false)
            #expect(try await catalog.delete(id: 999) == false)
        }
    }

    @Test func statisticsCountAndSum() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            #expect(
                try await catalog.statistics() == CatalogStatistics(count: 0, totalBytes: 0, newestID: nil))
            try await catalog.add(
                jpeg: fakeJPEG(seed: 1, count: 100), takenAt: 1, width: 1, height: 1, source: "a")
            try await catalog.add(
                jpeg: fakeJPEG(seed: 2, count: 250), takenAt: 2, width: 1, height: 1, source: "a")
            try await catalog.add(
                jpeg: fakeJPEG(seed: 3, count: 50), takenAt: 3, width: 1, height: 1, source: "a")
            #expect(try await catalog.delete(id: 3))
            #expect(
                try await catalog.statistics() == CatalogStatistics(count: 2, totalBytes: 350, newestID: 2))
        }
    }

    @Test func setKeepUpdatesTheRecord() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let added = try await catalog.add(seed: 1)
            let kept = try await catalog.setKeep(id: added.id, keep: true)
            #expect(kept?.keep == true)
            #expect(try await catalog.record(id: added.id)?.keep == true)
            #expect(try await catalog.setKeep(id: added.id, keep: false)?.keep == false)
            #expect(try await catalog.setKeep(id: 99, keep: true) == nil)
        }
    }

    @Test func changeCounterCountsEveryChangeToTheListing() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            #expect(catalog.changeCounter == 0)
            try await catalog.add(seed: 1)
            #expect(catalog.changeCounter == 1)
            try await catalog.add(seed: 2)
            #expect(catalog.changeCounter == 2)
            _ = try await catalog.delete(id: 1)
            #expect(catalog.changeCounter == 3)
            _ = try await catalog.delete(id: 1)
            #expect(catalog.changeCounter == 3)
            _ = try await catalog.setKeep(id: 2, keep: true)
            #expect(catalog.changeCounter == 4)
            _ = try await catalog.page(limit: 10)
            _ = try await catalog.record(id: 2)
            #expect(catalog.changeCounter == 4)
        }
    }

    @Test func instanceTokenIsRandomPerOpen() async throws {
        try await withTemporaryDirectory { directory in
            let first = try MediaCatalog.open(directory).instanceToken
            let second = try MediaCatalog.open(directory).instanceToken
            #expect(first.count == 16)
            #expect(first.allSatisfy { $0.isHexDigit && !$0.isUppercase })
            #expect(first != second)
        }
    }

    @Test func reopenKeepsEverything() async throws {
        try await withTemporaryDirectory { directory in
            var added: [MediaRecord] = []
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...5 {
                    added.append(
                        try await catalog.add(seed: seed, source: "camera \(seed)", jobID: Int64(seed)))
                }
                _ = try await catalog.delete(id: 2)
                added[3] = try await catalog.setKeep(id: 4, keep: true)!
                added.remove(at: 1)
            }
            let catalog = try MediaCatalog.open(directory)
            #expect(catalog.reconciliation.isClean)
            #expect(try await catalog.page(after: 0, limit: 10).items == added)
            for record in added {
                #expect(readFile(catalog.mediaPath(id: record.id)) == fakeJPEG(seed: Int(record.id)))
            }
            #expect(try await catalog.statistics().count == 4)
        }
    }

    @Test func aSecondCatalogOnTheSameDirectoryIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            #expect(throws: CatalogError.dataDirectoryInUse(directory)) {
                try MediaCatalog.open(directory)
            }
            try await catalog.add(seed: 1)
        }
    }

    @Test func openCreatesMissingParentDirectories() async throws {
        try await withTemporaryDirectory { directory in
            let nested = "\(directory)/a/b/data/"
            let catalog = try MediaCatalog.open(nested)
            try await catalog.add(seed: 1)
            #expect(fileExists("\(directory)/a/b/data/catalog.sqlite"))
            #expect(fileExists("\(directory)/a/b/data/media/1.jpg"))
        }
    }

    @Test func twoThousandPicturesPageWithoutGaps() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...2000 { try await catalog.add(seed: seed) }

            var seen: [Int64] = []
            var page = try await catalog.page(limit: 75)
            seen += page.items.map(\.id)
            while page.hasMore {
                page = try await catalog.page(before: page.items.last!.id, limit: 75)
                seen += page.items.map(\.id)
            }
            #expect(seen == Array((1...2000).reversed()))

            var polled: [Int64] = []
            var cursor: Int64 = 0
            repeat {
                page = try await catalog.page(after: cursor, limit: 333)
                polled += page.items.map(\.id)
                cursor = page.items.last?.id ?? cursor
            } while page.hasMore
            #expect(polled == Array(1...2000))
            #expect(try await catalog.statistics().count == 2000)
        }
    }
}
