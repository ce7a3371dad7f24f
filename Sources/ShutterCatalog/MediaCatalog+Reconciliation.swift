import ShutterSystem

extension MediaCatalog {
    /// What a look at the media directory found that disagrees with the rows; nothing changed yet.
    struct MediaDiscrepancies: Sendable {
        /// `.*.tmp` names: writes a crash interrupted before the rename.
        var temporaryFiles: [String] = []
        /// Ids of `<id>.jpg` files with no row.
        var orphanIDs: [Int64] = []
        /// Ids of rows with no `<id>.jpg` file.
        var missingIDs: [Int64] = []
        /// How many rows were compared.
        var rowsCompared = 0
        /// The largest id in any name the catalog writes, or 0.
        var largestFileID: Int64 = 0
    }

    /// Compares the rows with ids up to `largestRowID` with `listing`.
    ///
    /// The rows in id order against the files in id order: one merge walk finds what is on one
    /// side only, with no hash set of a million ids on either side (benchmarks/README.md, "A
    /// million pictures").
    static func discrepancies(
        database: Database, listing: MediaDirectory.Listing, largestRowID: Int64
    ) throws -> MediaDiscrepancies {
        var found = MediaDiscrepancies(
            temporaryFiles: listing.temporaryFiles.sorted(), largestFileID: listing.largestID)
        let fileIDs = listing.mediaIDs
        var nextFile = 0
        // An offloaded picture has no local file by design: neither missing, nor its file's row
        // (a file left beside it is checked against the rows again by `repair`, and stays).
        try database.makeStatement(sql: "SELECT id FROM media WHERE id <= ? AND offloaded = 0 ORDER BY id")
            .forEachRow(
                arguments: [largestRowID]
            ) { row in
                let id = try row.decode(Int64.self, at: 0)
                found.rowsCompared += 1
                while nextFile < fileIDs.count, fileIDs[nextFile] < id {
                    found.orphanIDs.append(fileIDs[nextFile])
                    nextFile += 1
                }
                if nextFile < fileIDs.count, fileIDs[nextFile] == id {
                    nextFile += 1
                } else {
                    found.missingIDs.append(id)
                }
            }
        found.orphanIDs += fileIDs[nextFile...]
        return found
    }

    /// What `repair` changed: the report, and the rows it removed with their bytes and events.
    struct MediaRepair {
        var report: ReconciliationReport
        var removedRows: [(id: Int64, bytes: Int64)] = []
        var events: [CatalogEvent] = []
    }

    /// Makes rows and files agree again after a crash or an outside change.
    ///
    /// - `.*.tmp` files are writes a crash interrupted before the rename: removed.
    /// - `<id>.jpg` without a row is a write a crash interrupted before the insert, or a delete
    ///   interrupted after it: removed, since no client was ever told about it or it is deleted.
    /// - A row whose file is gone describes a picture nobody can fetch: removed from the catalog.
    ///
    /// Each finding is checked again against the rows and the files as they are now, so what was
    /// found by a look taken while pictures came and went (`startMediaCheck`) removes only what is
    /// still wrong: a file whose row has been inserted since stays, as does a row whose file is back.
    static func repair(
        _ found: MediaDiscrepancies, database: Database, files: MediaDirectory, logger: Logger,
        nowWallMillis: Int64
    ) throws -> MediaRepair {
        var repair = MediaRepair(
            report: ReconciliationReport(
                removedTemporaryFiles: [], removedOrphanFileIDs: [], removedRowIDs: []))
        for name in found.temporaryFiles where try files.remove(named: name) {
            logger.warning("removed an unfinished picture file", ["file": name])
            repair.report.removedTemporaryFiles.append(name)
        }
        let rowBytes = try database.cachedStatement(sql: "SELECT bytes FROM media WHERE id = ?")
        for id in found.orphanIDs {
            guard try rowBytes.fetchOne(arguments: [id], { _ in true }) == nil, try files.remove(id: id)
            else {
                continue
            }
            logger.warning("removed a picture file that had no catalog row", ["id": String(id)])
            repair.report.removedOrphanFileIDs.append(id)
        }

        // Every file gone at once is not a crash: it is a media directory that is not
        // mounted, or was replaced. Deleting the rows would make that loss permanent, so
        // keep them (their media answers 404) until the files are back.
        if found.rowsCompared > 1 && found.missingIDs.count == found.rowsCompared {
            logger.error(
                "no picture file of the catalog is in the media directory; is it mounted? keeping the catalog as it is",
                ["rows": String(found.rowsCompared), "directory": files.path])
        } else if !found.missingIDs.isEmpty {
            try database.inTransaction {
                for id in found.missingIDs where !files.exists(id: id) {
                    guard
                        let bytes = try rowBytes.fetchOne(
                            arguments: [id], { try $0.decode(Int64.self, at: 0) })
                    else { continue }
                    let takenAt = try deletePictureRow(database, id: id)
                    repair.removedRows.append((id, bytes))
                    // Clients that listed it hear that it is gone, like any other delete.
                    repair.events.append(
                        try insertEvent(
                            database, .pictureDeleted, at: nowWallMillis,
                            data: pictureDeletedJSON(id: id, reason: .missingFile, takenAt: takenAt)))
                }
            }
            for (id, _) in repair.removedRows {
                logger.warning("removed a catalog row whose picture file is missing", ["id": String(id)])
            }
            repair.report.removedRowIDs = repair.removedRows.map(\.id)
        }

        // Removals need no directory sync for correctness (a removal lost in a power cut is redone
        // at the next open), but syncing once keeps the repair from being repeated and logged again.
        if !(repair.report.removedTemporaryFiles.isEmpty && repair.report.removedOrphanFileIDs.isEmpty) {
            try files.synchronize()
        }
        return repair
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
