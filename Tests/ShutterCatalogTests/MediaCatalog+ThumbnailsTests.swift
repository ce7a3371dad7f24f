import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

/// Cached thumbnails take disk like pictures: they count in the library's bytes and in
/// retention's byte limit, go with their picture, and what a crash or a full disk leaves of
/// them is cleaned up at the next open.
@Suite struct MediaCatalogThumbnailsTests {
    @Test func thumbnailsCountInTheLibrarysBytesUntilTheirPictureGoes() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                let first = try await catalog.add(seed: 1)
                let second = try await catalog.add(seed: 2)
                try await catalog.storeThumbnail(fakeJPEG(seed: 3, count: 100), id: first.id, width: 320)
                try await catalog.storeThumbnail(fakeJPEG(seed: 4, count: 50), id: first.id, width: 160)
                try await catalog.storeThumbnail(fakeJPEG(seed: 5, count: 70), id: second.id, width: 320)
                #expect(try await catalog.statistics().thumbnailBytes == 220)
                #expect(try await catalog.statistics().totalBytes == 600, "pictures alone, as before")
                // The same width made again replaces the file, and its bytes.
                try await catalog.storeThumbnail(fakeJPEG(seed: 6, count: 120), id: first.id, width: 320)
                #expect(try await catalog.statistics().thumbnailBytes == 240)
                #expect(try await catalog.delete(id: first.id))
                #expect(try await catalog.statistics().thumbnailBytes == 70)
            }
            // Counted from the disk at the next open.
            let reopened = try MediaCatalog.open(directory)
            #expect(try await reopened.statistics().thumbnailBytes == 70)
        }
    }

    @Test func retentionByBytesCountsThumbnailsAndRemovesThemWithTheirPicture() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog(
                dataDirectory: directory, logger: quietLogger,
                retention: RetentionPolicy(maxBytes: 1000))
            for seed in 1...3 {
                try await catalog.add(
                    jpeg: fakeJPEG(seed: seed, count: 300), takenAt: 1, width: 640, height: 480, source: "t")
            }
            // 900 bytes of pictures: a thumbnail of 100 fits, one more would not, so it is not cached.
            #expect(try await catalog.storeThumbnail(fakeJPEG(seed: 9, count: 100), id: 1, width: 320))
            #expect(
                try await catalog.storeThumbnail(fakeJPEG(seed: 10, count: 10), id: 2, width: 320) == false)
            #expect(!fileExists(catalog.thumbnailPath(id: 2, width: 320)))
            // A fourth picture: 1000 of pictures and 100 of thumbnail are over; the oldest goes,
            // and its thumbnail with it.
            try await catalog.add(
                jpeg: fakeJPEG(seed: 4, count: 100), takenAt: 2, width: 640, height: 480, source: "t")
            #expect(try await catalog.page(after: 0, limit: 10).items.map(\.id) == [2, 3, 4])
            #expect(!fileExists(catalog.thumbnailPath(id: 1, width: 320)))
            let statistics = try await catalog.statistics()
            #expect(statistics.totalBytes == 700 && statistics.thumbnailBytes == 0)
        }
    }

    @Test func aThumbnailOfAPictureDeletedMeanwhileIsNotCached() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let picture = try await catalog.add(seed: 1)
            #expect(try await catalog.delete(id: picture.id))
            #expect(try await catalog.storeThumbnail(fakeJPEG(seed: 2), id: picture.id, width: 320) == false)
            #expect(!fileExists(catalog.thumbnailPath(id: picture.id, width: 320)))
        }
    }

    @Test func openingRemovesUnfinishedThumbnailsAndThoseOfPicturesGone() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                let picture = try await catalog.add(seed: 1)
                try await catalog.storeThumbnail(fakeJPEG(seed: 2), id: picture.id, width: 320)
            }
            let thumbs = "\(directory)/media/thumbs"
            // A write a crash (or ENOSPC) cut short, and a thumbnail whose picture is gone.
            try writeFile("\(thumbs)/.1-160.jpg.1234567890.tmp", fakeJPEG(seed: 3))
            try writeFile("\(thumbs)/42-320.jpg", fakeJPEG(seed: 4))
            try writeFile("\(thumbs)/notes.txt", [1, 2, 3])
            let reopened = try MediaCatalog.open(directory)
            #expect(
                reopened.reconciliation.removedThumbnailFiles == [".1-160.jpg.1234567890.tmp", "42-320.jpg"])
            #expect(!reopened.reconciliation.isClean)
            #expect(directoryNames(thumbs).sorted() == ["1-320.jpg", "notes.txt"])
            #expect(try await reopened.statistics().thumbnailBytes == 300)
        }
    }

    @Test func thumbnailNamesAreReadExactly() {
        #expect(MediaDirectory.thumbnailName("12-320.jpg")! == (12, 320))
        for name in [
            "12-320.jpeg", "012-320.jpg", "12-0320.jpg", "12_320.jpg", "-320.jpg", "12-.jpg", "12.jpg",
        ] {
            #expect(MediaDirectory.thumbnailName(name) == nil, "\(name)")
        }
    }
}

/// `/healthz` reads why snaps are refused for space without waiting for the catalog's thread.
@Suite struct MediaCatalogSpaceShortageTests {
    @Test func aFloorAboveTheDiskIsAShortageFromTheOpenUntilItIsLowered() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog(
                dataDirectory: directory, logger: quietLogger, minimumFreeBytes: Int64.max / 2)
            let reason = try #require(catalog.spaceShortage())
            #expect(reason.contains("under the floor of \(Int64.max / 2) (min_free_bytes)"))
            #expect(!reason.contains(directory), "no paths for anonymous clients")
            await catalog.setMinimumFreeBytes(0)
            #expect(catalog.spaceShortage() == nil)
            await catalog.setMinimumFreeBytes(Int64.max / 2)
            #expect(catalog.spaceShortage() != nil)
            #expect(try MediaCatalog.open(directory + "/other").spaceShortage() == nil)
        }
    }

    @Test func shortagesAreReadFromWhatIsFree() {
        #expect(MediaCatalog.spaceShortage(availableBytes: 10, minimumFreeBytes: 100) != nil)
        #expect(MediaCatalog.spaceShortage(availableBytes: 100, minimumFreeBytes: 100) == nil)
        #expect(MediaCatalog.spaceShortage(availableBytes: 0, minimumFreeBytes: 0) == "the disk is full")
        #expect(MediaCatalog.spaceShortage(availableBytes: 1, minimumFreeBytes: 0) == nil)
    }
}
