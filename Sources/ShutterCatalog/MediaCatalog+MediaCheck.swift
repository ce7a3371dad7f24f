import ShutterSystem

/// Where the comparison of the media directory with the rows stands.
enum MediaCheckState {
    /// Not started; the rows up to `largestRowID` existed at open (later ones are this run's).
    case notStarted(largestRowID: Int64)
    /// Listing and comparing on the check's thread.
    case running
    /// Compared and repaired.
    case done(ReconciliationReport)
    /// The check failed (logged); leftovers stay until the next open.
    case failed
}

extension MediaCatalog {
    /// Compares the media directory with the rows on a thread of its own, then repairs on the
    /// catalog's thread what is still wrong; for a catalog opened with `checkMediaAtOpen` false.
    ///
    /// The listing and the comparison run beside the catalog, which serves meanwhile: listing a
    /// million files takes about a second of the kernel's time alone. Only rows that existed at
    /// open are compared (later ones are this run's, written file first), and `repair` checks
    /// each finding again before it removes anything. Until the repair, `add` skips any id whose
    /// name a crash left taken. Does nothing after the first call.
    public func startMediaCheck() throws {
        guard case .notStarted(let largestRowID) = mediaCheck else { return }
        mediaCheck = .running
        let files = self.files
        let databasePath = database.path
        let started = clock.monotonicNow()
        do {
            try OSThread.spawn(name: "shutter-mediachk") {
                let found: Result<MediaDiscrepancies, CatalogError>
                do {
                    // A connection of its own on this thread, only reading: in WAL mode it reads
                    // beside the catalog's connection without blocking its writes
                    // (https://www.sqlite.org/wal.html#concurrency).
                    let reader = try Database(path: databasePath)
                    let listing = try files.listing()
                    found = .success(
                        try Self.discrepancies(database: reader, listing: listing, largestRowID: largestRowID)
                    )
                } catch {
                    found = .failure(CatalogError(error))
                }
                Task { await self.finishMediaCheck(found, started: started) }
            }.detach()
        } catch {
            mediaCheck = .failed
            throw CatalogError(error)
        }
    }

    /// What the media check repaired, once it has: nil if it failed. For a catalog that checked
    /// at open, at once.
    public func mediaChecked() async -> ReconciliationReport? {
        switch mediaCheck {
        case .done(let report): return report
        case .failed: return nil
        case .notStarted, .running:
            return await withCheckedContinuation { mediaCheckWaiters.append($0) }
        }
    }

    /// Whether `add` can trust that no leftover holds a name at or above the next id.
    var isMediaChecked: Bool {
        if case .done = mediaCheck { return true }
        return false
    }

    /// Repairs what the check found, on the catalog's thread, and keeps the totals in step.
    private func finishMediaCheck(
        _ found: Result<MediaDiscrepancies, CatalogError>, started: MonotonicInstant
    ) {
        var outcome: ReconciliationReport?
        do {
            let found = try found.get()
            let repair = try Self.repair(
                found, database: database, files: files, logger: logger,
                nowWallMillis: clock.wallMillisecondsNow())
            // Ids in file names count too: a crash between the rename and the insert leaves a
            // file whose id sqlite_sequence never saw.
            nextID = max(nextID, found.largestFileID + 1)
            if !repair.removedRows.isEmpty {
                storedCount -= repair.removedRows.count
                storedBytes -= repair.removedRows.reduce(0) { $0 + $1.bytes }
                for (id, _) in repair.removedRows { removeThumbnails(id: id) }
                noteListingChanged()
                published(repair.events)
            }
            mediaCheck = .done(repair.report)
            outcome = repair.report
            logger.info(
                "media directory checked",
                [
                    "rows": String(found.rowsCompared),
                    "ms": OpenTimings.milliseconds(clock.monotonicNow().nanoseconds(since: started)),
                ])
        } catch {
            mediaCheck = .failed
            logger.error(
                "could not compare the media directory with the catalog; leftovers stay until the next start",
                ["error": "\(error)"])
        }
        let waiters = mediaCheckWaiters
        mediaCheckWaiters = []
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}
