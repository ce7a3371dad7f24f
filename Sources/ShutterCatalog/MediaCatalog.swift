import ShutterSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The catalog of pictures: the only owner of the database and of the media directory.
///
/// Layout: `<dataDirectory>/catalog.sqlite` and `<dataDirectory>/media/<id>.jpg`. Every method
/// throws only `CatalogError`.
///
/// The actor runs on a thread of its own (`ThreadExecutor`), not on the cooperative pool: every
/// method does blocking I/O (SQLite, fsync), and on a pool of one thread per core a slow disk
/// would otherwise stall every request handler with it. One connection, one thread, one owner.
public actor MediaCatalog {
    /// The catalog's own thread, where every isolated method runs.
    private nonisolated let executor: ThreadExecutor
    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// The directory holding the database and the media directory.
    public nonisolated let dataDirectory: String
    /// Random per open, so an ETag made before a restart never matches one made after it.
    public nonisolated let instanceToken: String
    /// What opening the catalog repaired (not the media directory's part when it is checked
    /// later: see `startMediaCheck` and `mediaChecked`).
    public nonisolated let reconciliation: ReconciliationReport
    /// How long each step of opening took, for the daemon's start-up log.
    public nonisolated let openTimings: OpenTimings
    /// Counts every change to the listing (add, delete, keep), for ETags of listings.
    ///
    /// Readable from any thread without waiting for the catalog's: a `304` to a poller is
    /// answered on the event loop, never queued behind a snap or a retention pass.
    public nonisolated var changeCounter: UInt64 { changes.load(ordering: .acquiring) }
    // Written only on the catalog's thread, after the change has committed (releasing), so a
    // reader that sees the new count sees a listing that has the change.
    private nonisolated let changes = Atomic<UInt64>(0)
    /// Applied after every add; nil removes nothing.
    public private(set) var retention: RetentionPolicy?
    /// Free bytes an add must leave on the media directory's file system; 0 turns the check off.
    public private(set) var minimumFreeBytes: Int64

    nonisolated let files: MediaDirectory
    // Internal so the jobs extension (MediaCatalog+Jobs.swift) shares this one connection.
    let database: Database
    private let lock: DataDirectoryLock
    let logger: Logger
    // The next id to hand out. Above every id in sqlite_sequence and in any file name, so an id is
    // never reused, even after the newest picture is deleted or a crash left only its file.
    var nextID: Int64
    // How many rows the media table has and their total bytes, loaded at open and kept in step by
    // add, delete and retention, so that an add knows without a query whether a limit is exceeded.
    var storedCount: Int
    var storedBytes: Int64
    // The size of each cached thumbnail by picture and width, and their total, loaded at open and
    // kept in step by `storeThumbnail` and `removeThumbnails`: thumbnails take disk too, so they
    // count towards the library's bytes and retention's byte limit.
    var thumbnailSizes: [Int64: [Int: Int64]]
    var storedThumbnailBytes: Int64
    /// Why pictures are refused for space, as last found, and when the disk was last looked at:
    /// written on the catalog's thread, read by `/healthz` on the event loop (no I/O under the lock).
    nonisolated let space = LockedValue(SpaceShortage())
    /// Reads listing pages beside the catalog, on its own connection and thread.
    public nonisolated let reader: CatalogReader
    /// Counts for `/metrics`, read from any thread.
    public nonisolated let counters = CatalogCounters()
    /// Every committed event, as a batch per transaction, in id order, on the catalog's thread:
    /// subscribers must return at once (see `Broadcast`).
    public nonisolated let eventFeed = Broadcast<[CatalogEvent]>()
    var eventHistory: EventHistory
    /// Whether the media directory has been compared with the rows (`startMediaCheck`).
    var mediaCheck: MediaCheckState
    /// Callers of `mediaChecked()` waiting for the check to end.
    var mediaCheckWaiters: [CheckedContinuation<ReconciliationReport?, Never>] = []
    /// The retention passes since the last one that found nothing more to remove, for one log line.
    var retentionRun: RetentionRun?
    /// The most pictures one retention pass removes (`defaultRetentionPassSize`).
    var retentionPassSize = MediaCatalog.defaultRetentionPassSize
    /// Whether a retention pass is queued on the catalog's thread already.
    var retentionPassQueued = false
    let clock: any Clock

    /// Opens the catalog in `dataDirectory`, creating it if needed, and repairs what a crash left.
    ///
    /// `retention` and `minimumFreeBytes` are described at their properties; `clock` tells
    /// retention the time. With `checkMediaAtOpen` false, the media directory is compared with
    /// the rows only when `startMediaCheck()` is called, on a thread of its own, while the
    /// catalog serves: listing a million files takes seconds, and start-up should not wait for it.
    public init(
        dataDirectory: String, logger: Logger, retention: RetentionPolicy? = nil, minimumFreeBytes: Int64 = 0,
        eventHistoryLimits: EventHistoryLimits = EventHistoryLimits(), clock: any Clock = SystemClock(),
        checkMediaAtOpen: Bool = true
    ) throws {
        do {
            guard !dataDirectory.isEmpty else { throw CatalogError.invalidArgument("dataDirectory is empty") }
            let executor = try ThreadExecutor(name: "shutter-catalog")
            let files = MediaDirectory(path: "\(dataDirectory)/media")
            try Self.makeDirectories(dataDirectory: dataDirectory, mediaDirectory: files.path)
            let lock = try DataDirectoryLock(directory: dataDirectory)
            // Each step of the open is timed and logged: with a large library, start-up is this.
            var timings = OpenTimings(clock: clock)
            let database = try Database(path: "\(dataDirectory)/catalog.sqlite")
            try CatalogSchema.migrate(database)
            timings.lap("sqlite_open_ms")
            try Self.createRetentionIndex(database)
            timings.lap("indexes_ms")
            var largestUsed = try Self.largestIDInDatabase(database)
            var report = ReconciliationReport(
                removedTemporaryFiles: [], removedOrphanFileIDs: [], removedRowIDs: [])
            if checkMediaAtOpen {
                let listing = try files.listing()
                timings.lap("listing_ms")
                // Ids in file names count too: a crash between the rename and the insert leaves a
                // file whose id sqlite_sequence never saw.
                largestUsed = max(largestUsed, listing.largestID)
                let found = try Self.discrepancies(
                    database: database, listing: listing, largestRowID: Int64.max)
                report = try Self.repair(
                    found, database: database, files: files, logger: logger,
                    nowWallMillis: clock.wallMillisecondsNow()
                ).report
                timings.lap("reconcile_ms")
            }
            // Offloaded pictures take no local space: retention's limits are about the disk.
            let totals = try Self.totals(database, where: "offloaded = 0")
            timings.lap("totals_ms")
            let thumbnails = try Self.reconcileThumbnails(database: database, files: files, logger: logger)
            report.removedThumbnailFiles = thumbnails.removed
            timings.lap("thumbnails_ms")
            let history = try Self.loadEventHistory(database, limits: eventHistoryLimits)
            timings.lap("events_ms")
            // After the schema is migrated: the reader reads the tables as they now are.
            let reader = try CatalogReader(path: database.path)
            timings.lap("reader_ms")

            self.executor = executor
            self.reader = reader
            self.dataDirectory = dataDirectory
            self.files = files
            self.lock = lock
            self.database = database
            self.logger = logger
            self.reconciliation = report
            self.nextID = largestUsed + 1
            self.instanceToken = try Self.randomToken()
            self.retention = retention
            self.minimumFreeBytes = minimumFreeBytes
            self.clock = clock
            self.eventHistory = history
            self.mediaCheck = checkMediaAtOpen ? .done(report) : .notStarted(largestRowID: largestUsed)
            self.storedCount = totals.count
            self.storedBytes = totals.totalBytes
            self.thumbnailSizes = thumbnails.sizes
            self.storedThumbnailBytes = thumbnails.sizes.values.reduce(0) { $0 + $1.values.reduce(0, +) }
            // A file system statvfs cannot read is no reason to refuse to open: the first add
            // checks again, and says why it fails.
            let shortage = (try? Self.availableBytes(path: files.path)).flatMap {
                Self.spaceShortage(availableBytes: $0, minimumFreeBytes: minimumFreeBytes)
            }
            let now = clock.monotonicNow()
            space.withLock {
                $0.reason = shortage
                $0.checkedAt = now
            }
            timings.lap("space_ms")
            self.openTimings = timings
        } catch {
            throw CatalogError(error)
        }
    }

    /// Stores a JPEG and its description; when this returns, both survive a power cut.
    ///
    /// Order: file under a temporary name, fsync, rename to `<id>.jpg`, fsync the directory, then
    /// the row. A crash at any point leaves either nothing or a file without a row, which the next
    /// open removes; never a row without a file.
    ///
    /// Throws `CatalogError.storageFull`, having stored nothing, when the picture would leave less
    /// than `minimumFreeBytes` free or the disk fills up while writing. Then applies `retention`;
    /// a picture that retention removes at once (a limit of 0 bytes) is still returned.
    @discardableResult
    public func add(
        jpeg: [UInt8], takenAt: Int64, width: Int, height: Int, source: String, jobID: Int64? = nil,
        label: String? = nil
    ) throws -> MediaRecord {
        guard !jpeg.isEmpty else { throw CatalogError.invalidArgument("jpeg is empty") }
        guard width > 0, height > 0 else {
            throw CatalogError.invalidArgument("size \(width)x\(height) is not positive")
        }
        try checkFreeSpace(for: jpeg.count)
        // Until the media directory has been compared with the rows, a crash's leftover may hold
        // the next id's name; it is skipped, never overwritten, so no id is handed out twice.
        if !isMediaChecked {
            while files.isTaken(id: nextID) { nextID += 1 }
        }
        // Taken even if the add fails, so a half-written id is never handed out twice.
        let id = nextID
        nextID += 1
        let record = MediaRecord(
            id: id, takenAt: takenAt, width: width, height: height, bytes: jpeg.count,
            sha256: SHA256.hexDigest(jpeg), source: source, jobID: jobID, keep: false, label: label)
        do {
            try files.store(jpeg, id: id)
        } catch let error where CatalogError(error).isStorageFull {
            // On a small disk the WAL can hold the room a delete just freed (it shrinks only at a
            // checkpoint): give that back and try once more, so deleting makes room at once.
            reclaimDatabaseSpace()
            do {
                try files.store(jpeg, id: id)
            } catch {
                let failure = CatalogError(error)
                if failure.isStorageFull { noteSpaceShortage(Self.fullDiskReason) }
                throw failure
            }
        } catch {
            let failure = CatalogError(error)
            if failure.isStorageFull { noteSpaceShortage(Self.fullDiskReason) }
            throw failure
        }
        let created: CatalogEvent
        do {
            created = try database.inTransaction {
                try database.cachedStatement(
                    sql: """
                        INSERT INTO media (id, taken_at, width, height, bytes, sha256, source, job_id, keep, label)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        """
                ).execute(arguments: [
                    record.id, record.takenAt, record.width, record.height, record.bytes, record.sha256,
                    record.source, record.jobID, record.keep, record.label,
                ])
                return try insertEvent(.pictureCreated, data: record.json)
            }
        } catch let insertError {
            // Without the row the file is an orphan; if this removal fails too, the next open does it.
            do {
                try files.remove(id: id)
            } catch {
                logger.warning(
                    "could not remove the file of a failed add", ["id": String(id), "error": "\(error)"])
            }
            if CatalogError(insertError).isStorageFull {
                noteSpaceShortage(Self.fullDiskReason)
                reclaimDatabaseSpace()
            }
            throw CatalogError(insertError)
        }
        noteListingChanged()
        storedCount += 1
        storedBytes += Int64(record.bytes)
        // Published before anything else can record an event (the storage state below, retention),
        // so subscribers get the ids in the order they were handed out.
        published([created])
        // Stored, so there was room: whatever a full disk said before no longer holds.
        noteSpaceShortage(nil)
        applyRetentionIfExceeded()
        return record
    }

    /// The picture with `id`, or nil if there is none.
    public func record(id: Int64) throws -> MediaRecord? {
        do {
            return try database.fetchOne(
                sql: "SELECT \(Self.columns) FROM media WHERE id = ?", arguments: [id], Self.decodeRecord)
        } catch {
            throw CatalogError(error)
        }
    }

    /// One page of pictures, walked along the primary key.
    ///
    /// - With no cursor, or only `before`: newest first (`id < before`, descending).
    /// - With `after`: what came after it, in the order taken (`id > after`, ascending), which is
    ///   how a polling client fetches what is new.
    /// - With both: the ids strictly between them, ascending.
    ///
    /// `hasMore` says whether a further page exists in the same direction. `jobID` keeps only the
    /// pictures of that job, `label` only those taken with exactly that label, `keep` only those
    /// marked (or not marked) keep, and `takenSince`/`takenUntil` (wall milliseconds) only those
    /// taken at or after `takenSince` and before `takenUntil`. Every filter is indexed; they
    /// combine with each other and with the cursors.
    public func page(
        before: Int64? = nil, after: Int64? = nil, limit: Int, jobID: Int64? = nil, label: String? = nil,
        keep: Bool? = nil, takenSince: Int64? = nil, takenUntil: Int64? = nil
    ) throws -> MediaPage {
        try Self.page(
            in: database, before: before, after: after, limit: limit, jobID: jobID, label: label, keep: keep,
            takenSince: takenSince, takenUntil: takenUntil)
    }

    /// `page` on `database`: the catalog's own connection, or a `CatalogReader`'s.
    static func page(
        in database: Database, before: Int64?, after: Int64?, limit: Int, jobID: Int64?, label: String?,
        keep: Bool?, takenSince: Int64?, takenUntil: Int64?
    ) throws -> MediaPage {
        guard limit >= 1 else { throw CatalogError.invalidArgument("limit \(limit) is below 1") }
        // SQLite's LIMIT is a 64-bit integer; clamping keeps `limit + 1` from overflowing.
        let limit = min(limit, Int(Int32.max))
        // One more row than asked tells whether another page exists without a COUNT.
        let (sql, arguments) = pageQuery(
            before: before, after: after, rows: limit + 1, jobID: jobID, label: label, keep: keep,
            takenSince: takenSince, takenUntil: takenUntil)
        do {
            var items = try database.fetchAll(sql: sql, arguments: arguments, decodeRecord)
            let hasMore = items.count > limit
            if hasMore { items.removeLast() }
            return MediaPage(items: items, hasMore: hasMore)
        } catch {
            throw CatalogError(error)
        }
    }

    /// Deletes the picture with `id`, row first, then file; returns false if there is none.
    public func delete(id: Int64) throws -> Bool {
        do {
            // Row first: a crash between the two leaves a file without a row, invisible to clients and
            // removed at the next open. The other order would leave a row without a file: a picture
            // that every listing shows and that fails when fetched.
            guard
                let (bytes, offloaded) = try database.fetchOne(
                    sql: "SELECT bytes, offloaded FROM media WHERE id = ?", arguments: [id],
                    { (try $0.decode(Int64.self, at: 0), try $0.decode(Bool.self, at: 1)) })
            else { return false }
            // The row and its event in one transaction: no client hears of a delete that did not
            // happen, or misses one that did.
            let deleteRow = { () throws -> CatalogEvent? in
                try self.database.inTransaction {
                    guard let takenAt = try Self.deletePictureRow(self.database, id: id) else { return nil }
                    return try self.insertEvent(
                        .pictureDeleted, data: pictureDeletedJSON(id: id, reason: .request, takenAt: takenAt))
                }
            }
            var deleted: CatalogEvent?
            do {
                deleted = try deleteRow()
            } catch let error where CatalogError(error).isStorageFull {
                // On a full disk even a DELETE needs room in the WAL, and deleting is how a user makes
                // room. Removing the file first frees it; a crash before the row goes leaves a row
                // without a file, which the next open removes like any other.
                try files.remove(id: id)
                reclaimDatabaseSpace()
                deleted = try deleteRow()
            }
            guard let deleted else { return false }
            if !offloaded {
                storedCount -= 1
                storedBytes -= bytes
            }
            noteListingChanged()
            published([deleted])
        } catch {
            throw CatalogError(error)
        }
        // The row is gone, so the delete has happened for every client; a file that will not go away
        // is an orphan the next open removes, not a failure to report.
        do {
            try files.remove(id: id)
        } catch {
            logger.warning(
                "could not remove the file of a deleted picture", ["id": String(id), "error": "\(error)"])
        }
        removeThumbnails(id: id)
        return true
    }

    /// Counts a change to the listing, which every listing's ETag follows.
    func noteListingChanged() {
        changes.add(1, ordering: .releasing)
    }

    /// Removes the thumbnails of a deleted picture; one left behind is only wasted space, since
    /// ids are never reused, and the next open removes it.
    ///
    /// Only the widths `thumbnailSizes` knows, which is every thumbnail stored since the open
    /// (and those found at it): no listing of `thumbs/` per picture, which retention removing
    /// 100,000 pictures would pay 100,000 times.
    func removeThumbnails(id: Int64) {
        guard let sizes = thumbnailSizes.removeValue(forKey: id) else { return }
        storedThumbnailBytes -= sizes.values.reduce(0, +)
        for width in sizes.keys.sorted() {
            do {
                try files.removeThumbnail(named: "\(id)-\(width).jpg")
            } catch {
                logger.warning(
                    "could not remove the thumbnail of a deleted picture",
                    ["id": String(id), "width": String(width), "error": "\(error)"])
            }
        }
    }

    /// How many pictures there are, their total size, the size of their cached thumbnails, and
    /// the newest id.
    ///
    /// The count and bytes are the ones kept in step by every change, not a `count(*)`: `/status`
    /// and `/metrics` ask for these, and with a million pictures the scan took 0.3 to 0.5 s of the
    /// catalog's thread per request. The newest id is one seek of the primary key.
    public func statistics() throws -> CatalogStatistics {
        do {
            let newestID = try database.fetchOne(sql: "SELECT max(id) FROM media") { row -> Int64? in row[0] }
            return CatalogStatistics(
                count: storedCount, totalBytes: storedBytes, newestID: newestID ?? nil,
                thumbnailBytes: storedThumbnailBytes)
        } catch {
            throw CatalogError(error)
        }
    }

    /// Moves the WAL into the database file and truncates it, giving its space back to a full disk.
    ///
    /// The WAL is reset only at a checkpoint, every 1000 pages by default, so on a small disk it can
    /// hold much of the free space (https://www.sqlite.org/wal.html#ckpt). Best effort: if the
    /// checkpoint cannot run, the WAL stays as it was.
    func reclaimDatabaseSpace() {
        do {
            try database.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
        } catch {
            logger.warning("could not truncate the WAL on a full disk", ["error": "\(error)"])
        }
    }

    /// Sets the retention applied after every add (nil for none); does not apply it now.
    public func setRetention(_ policy: RetentionPolicy?) {
        retention = policy
    }

    /// Sets the free bytes an add must leave (0 turns the check off).
    public func setMinimumFreeBytes(_ bytes: Int64) {
        minimumFreeBytes = max(0, bytes)
        refreshSpaceShortage()
    }

    /// Marks the picture with `id` as kept (or not) by retention; nil if there is none.
    public func setKeep(id: Int64, keep: Bool) throws -> MediaRecord? {
        do {
            let updated = try database.inTransaction { () throws -> (MediaRecord, CatalogEvent)? in
                try database.cachedStatement(sql: "UPDATE media SET keep = ? WHERE id = ?")
                    .execute(arguments: [keep, id])
                guard database.changesCount > 0, let record = try record(id: id) else { return nil }
                return (record, try insertEvent(.pictureUpdated, data: record.json))
            }
            guard let (record, event) = updated else { return nil }
            // Listings show `keep`, so their ETags must change with it.
            noteListingChanged()
            published([event])
            return record
        } catch {
            throw CatalogError(error)
        }
    }

    /// The path of the file of `id`, for serving it with sendfile.
    public nonisolated func mediaPath(id: Int64) -> String {
        files.filePath(id: id)
    }

    /// The path of the thumbnail of `id` at `width`, for serving it with sendfile.
    public nonisolated func thumbnailPath(id: Int64, width: Int) -> String {
        files.thumbnailPath(id: id, width: width)
    }

    /// Stores a thumbnail of `id` at `width` for `thumbnailPath(id:width:)` to serve; returns
    /// false, storing nothing, when it would take the library past retention's byte limit (a
    /// cache must never make retention remove pictures) or the picture is gone.
    ///
    /// On the catalog's thread, like every other write, and held to the same floor of free
    /// disk: throws `CatalogError.storageFull`, storing nothing, rather than leave less than
    /// `minimumFreeBytes`, or when the disk is full.
    @discardableResult
    public func storeThumbnail(_ bytes: [UInt8], id: Int64, width: Int) throws -> Bool {
        try checkFreeSpace(for: bytes.count)
        let replaced = thumbnailSizes[id]?[width] ?? 0
        let added = Int64(bytes.count) - replaced
        if let maxBytes = retention?.maxBytes, storedBytes + storedThumbnailBytes + added > maxBytes {
            return false
        }
        do {
            // Deleted since the request opened it: a thumbnail now would outlive its picture.
            guard
                try database.fetchOne(sql: "SELECT 1 FROM media WHERE id = ?", arguments: [id], { _ in true })
                    != nil
            else { return false }
            try files.storeThumbnail(bytes, id: id, width: width)
        } catch {
            throw CatalogError(error)
        }
        thumbnailSizes[id, default: [:]][width] = Int64(bytes.count)
        storedThumbnailBytes += added
        return true
    }

    // MARK: - Queries

    static let columns =
        "id, taken_at, width, height, bytes, sha256, source, job_id, keep, label, uploaded, offloaded"

    /// The SQL and arguments of `page`, reading at most `rows` rows.
    static func pageQuery(
        before: Int64?, after: Int64?, rows: Int, jobID: Int64? = nil, label: String? = nil,
        keep: Bool? = nil,
        takenSince: Int64? = nil, takenUntil: Int64? = nil
    ) -> (sql: String, arguments: StatementArguments) {
        var conditions: [String] = []
        var arguments: [DatabaseValue] = []
        if let after {
            conditions.append("id > ?")
            arguments.append(.integer(after))
        }
        if let before {
            conditions.append("id < ?")
            arguments.append(.integer(before))
        }
        if let jobID {
            conditions.append("job_id = ?")
            arguments.append(.integer(jobID))
        }
        if let label {
            conditions.append("label = ?")
            arguments.append(.text(label))
        }
        if let keep {
            // A literal, not a parameter: SQLite uses a partial index (media_kept, media_unkept)
            // only for a WHERE term that matches its own.
            conditions.append(keep ? "keep = 1" : "keep = 0")
        }
        if takenSince != nil || takenUntil != nil {
            let time = takenBetween(since: takenSince, until: takenUntil)
            conditions += time.conditions
            arguments += time.arguments
        }
        arguments.append(.integer(Int64(rows)))
        return (pageSQL(conditions: conditions, ascending: after != nil), StatementArguments(arguments))
    }

    /// The page query for `conditions` (joined with AND), ordered along the primary key.
    ///
    /// The last parameter is the row limit.
    static func pageSQL(conditions: [String], ascending: Bool) -> String {
        let filter = conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND ")
        return "SELECT \(columns) FROM media\(filter) ORDER BY id \(ascending ? "ASC" : "DESC") LIMIT ?"
    }

    /// The conditions that keep the pictures taken in `[since, until)` (either may be nil), in id
    /// order without sorting and without a scan.
    ///
    /// An index on `taken_at` yields its rows in time order, which is not id order: a clock set
    /// back, or two snaps stored in the other order than their frames were captured, make the two
    /// differ. So the time range is turned into an id range instead: the smallest and the largest
    /// id taken in it, read once per query from media_taken_at alone (each entry ends with its
    /// rowid, so the range's index entries are read and never the table; the cost grows with the
    /// pictures in the range, not the library). The listing then walks the primary key between
    /// those ids, in id order as without a time filter, and keeps the rows whose `taken_at` is in
    /// the range. When ids and times agree (the usual case) every row walked is one listed. `INDEXED BY`
    /// because with one bound SQLite would rather find `min(id)` by walking the primary key up to
    /// the first row in range, a scan of everything older; the `+` keeps it from answering the
    /// outer `taken_at` terms from media_taken_at, which would need a sort.
    static func takenBetween(since: Int64?, until: Int64?) -> (
        conditions: [String], arguments: [DatabaseValue]
    ) {
        var terms: [String] = []
        var bounds: [DatabaseValue] = []
        if let since {
            terms.append("taken_at >= ?")
            bounds.append(.integer(since))
        }
        if let until {
            terms.append("taken_at < ?")
            bounds.append(.integer(until))
        }
        let range = terms.joined(separator: " AND ")
        // An empty range makes min and max NULL, and "id >= NULL" keeps nothing.
        return (
            [
                "id >= (SELECT min(id) FROM media INDEXED BY media_taken_at WHERE \(range))",
                "id <= (SELECT max(id) FROM media INDEXED BY media_taken_at WHERE \(range))",
            ]
                + terms.map { "+" + $0 },
            bounds + bounds + bounds
        )
    }

    static func decodeRecord(_ row: Row) throws -> MediaRecord {
        MediaRecord(
            id: try row.decode(at: 0), takenAt: try row.decode(at: 1), width: try row.decode(at: 2),
            height: try row.decode(at: 3), bytes: try row.decode(at: 4), sha256: try row.decode(at: 5),
            source: try row.decode(at: 6), jobID: row[7], keep: try row.decode(at: 8), label: row[9],
            uploaded: try row.decode(at: 10), offloaded: try row.decode(at: 11))
    }

    // MARK: - Opening

    private static func makeDirectories(dataDirectory: String, mediaDirectory: String) throws {
        try makeDirectory(dataDirectory, mode: 0o700)
        try makeDirectory(mediaDirectory, mode: 0o755)
    }

    /// Creates `path` and any missing parents (as `mkdir -p`); returns false if it already existed.
    @discardableResult
    private static func makeDirectory(_ path: String, mode: mode_t) throws -> Bool {
        do {
            _ = try syscall("mkdir \(path)") { mkdir(path, mode) }
        } catch let error as SystemError where error.errno == EEXIST {
            return false
        } catch let error as SystemError where error.errno == ENOENT {
            try makeDirectory(parentDirectory(of: path), mode: mode)
            _ = try syscall("mkdir \(path)") { mkdir(path, mode) }
        }
        // A new directory's name is durable only once its parent directory is synced (fsync(2)).
        try MediaDirectory(path: parentDirectory(of: path)).synchronize()
        return true
    }

    /// The directory containing `path` (`.` for a bare name, `/` for a top-level one).
    private static func parentDirectory(of path: String) -> String {
        var trimmed = Substring(path)
        while trimmed.count > 1, trimmed.hasSuffix("/") { trimmed.removeLast() }
        guard let slash = trimmed.lastIndex(of: "/") else { return "." }
        return slash == trimmed.startIndex ? "/" : String(trimmed[..<slash])
    }

    private static func totals(_ database: Database, where condition: String = "1") throws
        -> CatalogStatistics
    {
        let statistics = try database.fetchOne(
            sql: "SELECT count(*), coalesce(sum(bytes), 0), max(id) FROM media WHERE \(condition)"
        ) { row in
            CatalogStatistics(
                count: try row.decode(at: 0), totalBytes: try row.decode(at: 1), newestID: row[2])
        }
        return statistics ?? CatalogStatistics(count: 0, totalBytes: 0, newestID: nil)
    }

    private static func largestIDInDatabase(_ database: Database) throws -> Int64 {
        // sqlite_sequence holds the largest id ever inserted, even when that row is deleted
        // (https://www.sqlite.org/autoinc.html); max(id) covers a sequence row removed by hand.
        let sequence =
            try database.fetchOne(sql: "SELECT seq FROM sqlite_sequence WHERE name = 'media'") {
                try $0.decode(Int64.self, at: 0)
            } ?? 0
        let largestRow =
            try database.fetchOne(sql: "SELECT coalesce(max(id), 0) FROM media") {
                try $0.decode(Int64.self, at: 0)
            } ?? 0
        return max(sequence, largestRow)
    }

    private static func randomToken() throws -> String {
        // Swift's Glibc module does not import getrandom(2); /dev/urandom gives the same bytes
        // and never blocks once the pool is initialised (random(4)).
        let descriptor = try syscall("open /dev/urandom") { open("/dev/urandom", O_RDONLY | O_CLOEXEC) }
        defer { closeDescriptor(descriptor) }
        var bytes = [UInt8](repeating: 0, count: 8)
        var count = 0
        while count < bytes.count {
            let read = try bytes.withUnsafeMutableBytes { buffer in
                try syscall("read /dev/urandom") {
                    Glibc.read(descriptor, buffer.baseAddress! + count, buffer.count - count)
                }
            }
            guard read > 0 else { throw SystemError(errno: EIO, call: "read /dev/urandom") }
            count += read
        }
        let digits = Array("0123456789abcdef".utf8)
        return String(
            decoding: bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]] }, as: UTF8.self)
    }
}
