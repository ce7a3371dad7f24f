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

        // An offloaded picture has no local file by design: neither missing nor an orphan's row.
        let rowIDs = Set(
            try database.fetchAll(sql: "SELECT id FROM media WHERE offloaded = 0") {
                try $0.decode(Int64.self, at: 0)
            })
        let orphanIDs = listing.mediaIDs.subtracting(rowIDs).sorted()
        for id in orphanIDs {
            try files.remove(id: id)
            logger.warning("removed a picture file that had no catalog row", ["id": String(id)])
        }

        var missingIDs = rowIDs.subtracting(listing.mediaIDs).sorted()
        // Every file gone at once is not a crash: it is a media directory that is not
        // mounted, or was replaced. Deleting the rows would make that loss permanent, so
        // keep them (their media answers 404) until the files are back.
        if rowIDs.count > 1 && missingIDs.count == rowIDs.count {
            logger.error(
                "no picture file of the catalog is in the media directory; is it mounted? keeping the catalog as it is",
                ["rows": String(rowIDs.count), "directory": files.path])
            missingIDs = []
        }
        if !missingIDs.isEmpty {
            try database.inTransaction {
                for id in missingIDs {
                    let takenAt = try deletePictureRow(database, id: id)
                    // Clients that listed it hear that it is gone, like any other delete.
                    _ = try insertEvent(
                        database, .pictureDeleted, at: nowWallMillis,
                        data: pictureDeletedJSON(id: id, reason: .missingFile, takenAt: takenAt))
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
