import ShutterSystem

extension MediaCatalog {
    /// Makes rows and files agree again after a crash or an outside change.
    ///
    /// - `.*.tmp` files are writes a crash interrupted before the rename: removed.
    /// - `<id>.jpg` without a row is a write a crash interrupted before the insert, or a delete
    ///   interrupted after it: removed, since no client was ever told about it or it is deleted.
    /// - A row whose file is gone describes a picture nobody can fetch: removed from the catalog.
    static func reconcile(
        database: Database, files: MediaDirectory, listing: MediaDirectory.Listing, logger: Logger,
        nowWallMillis: Int64
    ) throws -> ReconciliationReport {
        for name in listing.temporaryFiles.sorted() {
            try files.remove(named: name)
            logger.warning("removed an unfinished picture file", ["file": name])
        }

        // The rows in id order against the files in id order: one merge walk finds what is on one
        // side only. With a million pictures, two hash sets of ids and their differences cost
        // several times this (see benchmarks/README.md, "A million pictures").
        let fileIDs = listing.mediaIDs
        var orphanIDs: [Int64] = []
        var missingIDs: [Int64] = []
        var rowCount = 0
        var nextFile = 0
        try database.makeStatement(sql: "SELECT id FROM media ORDER BY id").forEachRow { row in
            let id = try row.decode(Int64.self, at: 0)
            rowCount += 1
            while nextFile < fileIDs.count, fileIDs[nextFile] < id {
                orphanIDs.append(fileIDs[nextFile])
                nextFile += 1
            }
            if nextFile < fileIDs.count, fileIDs[nextFile] == id {
                nextFile += 1
            } else {
                missingIDs.append(id)
            }
        }
        orphanIDs += fileIDs[nextFile...]
        for id in orphanIDs {
            try files.remove(id: id)
            logger.warning("removed a picture file that had no catalog row", ["id": String(id)])
        }

        // Every file gone at once is not a crash: it is a media directory that is not
        // mounted, or was replaced. Deleting the rows would make that loss permanent, so
        // keep them (their media answers 404) until the files are back.
        if rowCount > 1 && missingIDs.count == rowCount {
            logger.error(
                "no picture file of the catalog is in the media directory; is it mounted? keeping the catalog as it is",
                ["rows": String(rowCount), "directory": files.path])
            missingIDs = []
        }
        if !missingIDs.isEmpty {
            try database.inTransaction {
                let statement = try database.cachedStatement(sql: "DELETE FROM media WHERE id = ?")
                for id in missingIDs {
                    try statement.execute(arguments: [id])
                    // Clients that listed it hear that it is gone, like any other delete.
                    _ = try insertEvent(
                        database, .pictureDeleted, at: nowWallMillis,
                        data: pictureDeletedJSON(id: id, reason: .missingFile))
                }
            }
            for id in missingIDs {
                logger.warning("removed a catalog row whose picture file is missing", ["id": String(id)])
            }
        }

        // Removals need no directory sync for correctness (a removal lost in a power cut is redone
        // at the next open), but syncing once keeps the repair from being repeated and logged again.
        if !(listing.temporaryFiles.isEmpty && orphanIDs.isEmpty) {
            try files.synchronize()
        }
        return ReconciliationReport(
            removedTemporaryFiles: listing.temporaryFiles.sorted(), removedOrphanFileIDs: orphanIDs,
            removedRowIDs: missingIDs)
    }

    /// Makes `thumbs/` agree with the rows, after `reconcile`: removes what a crash or a full
    /// disk left (`.*.tmp`) and thumbnails whose picture is gone; returns the size of each
    /// thumbnail kept (they count towards the library's bytes) and the names removed.
    static func reconcileThumbnails(database: Database, files: MediaDirectory, logger: Logger) throws -> (
        sizes: [Int64: [Int: Int64]], removed: [String]
    ) {
        var listing = try files.thumbnailListing()
        var removed: [String] = []
        for name in listing.temporaryFiles.sorted() {
            try files.removeThumbnail(named: name)
            logger.warning("removed an unfinished thumbnail file", ["file": name])
            removed.append(name)
        }
        let exists = try database.cachedStatement(sql: "SELECT 1 FROM media WHERE id = ?")
        for id in listing.sizes.keys.sorted() {
            guard try exists.fetchOne(arguments: [id], { _ in true }) == nil else { continue }
            for width in (listing.sizes.removeValue(forKey: id) ?? [:]).keys.sorted() {
                let name = "\(id)-\(width).jpg"
                try files.removeThumbnail(named: name)
                removed.append(name)
            }
            logger.warning("removed the thumbnails of a picture that is gone", ["id": String(id)])
        }
        return (listing.sizes, removed)
    }
}
