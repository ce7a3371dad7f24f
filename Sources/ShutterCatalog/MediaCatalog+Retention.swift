import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

extension MediaCatalog {
    /// Rows read per query while looking for pictures to remove by count or bytes.
    static let retentionBatchSize: Int64 = 256

    /// The most pictures one pass of retention removes after an add: one transaction and the
    /// files. Everything else the catalog does (a snap's add above all) waits while a pass runs on
    /// its thread, so a large excess (a limit lowered by 100,000 pictures) is removed over many
    /// short passes, each queued behind the work that arrived during the one before.
    static let defaultRetentionPassSize = 250

    /// Sets how many pictures one retention pass removes at most (`defaultRetentionPassSize`).
    func setRetentionPassSize(_ size: Int) {
        retentionPassSize = max(1, size)
    }

    /// Up to the third parameter of the pictures retention may remove that were taken before the
    /// first parameter and no later than the second, oldest first.
    ///
    /// No ORDER BY: with one, SQLite prefers walking the whole table in rowid order to sorting, and
    /// this query must instead cost one seek of the partial index media_retention when nothing
    /// expired; it walks that index in taken_at order anyway, and the rows found are sorted by id
    /// in memory. Offloaded pictures have no local file left to remove; with `offload`, only
    /// uploaded ones may go.
    static func expiredSQL(offload: Bool) -> String {
        "SELECT id, bytes FROM media WHERE keep = 0 AND taken_at < ? AND taken_at <= ? AND offloaded = 0"
            + (offload ? " AND uploaded = 1" : "") + " LIMIT ?"
    }

    /// Up to the third parameter of the pictures retention may remove with an id above the first
    /// parameter, taken no later than the second, in id order.
    ///
    /// INDEXED BY walks media_unkept from the cursor: kept pictures are not in it, so however many
    /// there are, a batch costs only its own rows, never a sort (https://www.sqlite.org/lang_indexedby.html).
    static func oldestSQL(offload: Bool) -> String {
        """
        SELECT id, bytes FROM media INDEXED BY media_unkept
        WHERE keep = 0 AND id > ? AND taken_at <= ? AND offloaded = 0\(offload ? " AND uploaded = 1" : "")
        ORDER BY id LIMIT ?
        """
    }

    /// Removes what `policy` says must go, oldest (smallest id) first; returns the removed ids.
    ///
    /// Kept pictures and pictures taken less than `minimumAgeMilliseconds` before `nowWallMillis`
    /// are never removed, but they count towards the count and byte limits. Cached thumbnails
    /// count towards the byte limit too, and go with their picture. Rows go in one
    /// transaction, then files: as in `delete`, a crash in between leaves files without rows,
    /// invisible to clients and removed at the next open, never a row without its file.
    @discardableResult
    public func applyRetention(_ policy: RetentionPolicy, nowWallMillis: Int64) throws -> [Int64] {
        let removed = try removeForRetention(policy, nowWallMillis: nowWallMillis, atMost: Int.max)
        if !removed.isEmpty {
            logger.info(
                "retention removed pictures",
                [
                    "count": String(removed.count), "first_id": String(removed[0]),
                    "last_id": String(removed[removed.count - 1]),
                ])
        }
        return removed
    }

    /// What `applyRetention` does, but at most `limit` pictures, and without logging; returns the
    /// removed ids in order.
    func removeForRetention(_ policy: RetentionPolicy, nowWallMillis: Int64, atMost limit: Int) throws
        -> [Int64]
    {
        guard !policy.isUnlimited, limit > 0 else { return [] }
        // A picture taken at or before this instant is old enough to be removed.
        let oldEnough = nowWallMillis.subtractingReportingOverflow(max(0, policy.minimumAgeMilliseconds))
            .partialValue
        var removed: [(id: Int64, bytes: Int64)] = []
        var events: [CatalogEvent] = []
        do {
            if let maxAge = policy.maxAgeMilliseconds {
                let expired = nowWallMillis.subtractingReportingOverflow(max(0, maxAge)).partialValue
                removed = try database.fetchAll(
                    sql: Self.expiredSQL(offload: policy.offloadsUploaded),
                    arguments: [expired, oldEnough, Int64(clamping: limit)],
                    Self.decodeIDAndBytes
                ).sorted { $0.id < $1.id }
            }
            let expiredIDs = Set(removed.map(\.id))
            var excessCount = Int64(policy.maxPictures.map { storedCount - removed.count - $0 } ?? 0)
            var excessBytes =
                policy.maxBytes.map {
                    storedBytes + storedThumbnailBytes
                        - removed.reduce(0) { $0 + $1.bytes + thumbnailBytes(of: $1.id) }
                        - $0
                } ?? 0
            var cursor: Int64 = 0
            while (excessCount > 0 || excessBytes > 0) && removed.count < limit {
                let batch = try database.fetchAll(
                    sql: Self.oldestSQL(offload: policy.offloadsUploaded),
                    arguments: [cursor, oldEnough, Self.retentionBatchSize],
                    Self.decodeIDAndBytes)
                guard let last = batch.last else { break }
                cursor = last.id
                for row in batch where !expiredIDs.contains(row.id) {
                    guard (excessCount > 0 || excessBytes > 0) && removed.count < limit else { break }
                    removed.append(row)
                    excessCount -= 1
                    excessBytes -= row.bytes + thumbnailBytes(of: row.id)
                }
            }
            guard !removed.isEmpty else { return [] }
            events = try database.inTransaction {
                var events: [CatalogEvent] = []
                events.reserveCapacity(removed.count)
                for row in removed.sorted(by: { $0.id < $1.id }) {
                    if policy.offloadsUploaded {
                        // The picture stays, in the store: only its local file goes (no event: it
                        // is not deleted, and the sinks have nothing to do).
                        try database.cachedStatement(sql: "UPDATE media SET offloaded = 1 WHERE id = ?")
                            .execute(arguments: [row.id])
                        continue
                    }
                    let takenAt = try Self.deletePictureRow(database, id: row.id)
                    events.append(
                        try insertEvent(
                            .pictureDeleted,
                            data: pictureDeletedJSON(id: row.id, reason: .retention, takenAt: takenAt)))
                }
                return events
            }
        } catch {
            throw CatalogError(error)
        }
        removed.sort { $0.id < $1.id }
        storedCount -= removed.count
        storedBytes -= removed.reduce(0) { $0 + $1.bytes }
        noteListingChanged()
        published(events)
        // The rows are gone, so the pictures are gone for every client; a file that stays is an
        // orphan the next open removes.
        for row in removed {
            do {
                try files.remove(id: row.id)
            } catch {
                logger.warning(
                    "could not remove the file of a picture retention removed",
                    ["id": String(row.id), "error": "\(error)"])
            }
            removeThumbnails(id: row.id)
        }
        counters.removedByRetention.add(UInt64(removed.count), ordering: .relaxed)
        return removed.map(\.id)
    }

    /// Applies `retention` if a limit could be exceeded: counts and bytes are checked in memory,
    /// an age limit costs one indexed query.
    ///
    /// One pass of at most `retentionPassSize` pictures; when there is more to remove, the next
    /// pass is queued on the catalog's thread behind whatever is waiting there, so snaps go on
    /// between passes. A run of passes is logged once, when it is done.
    ///
    /// The picture just added is stored whatever happens here, so a failure is logged, not thrown.
    func applyRetentionIfExceeded() {
        guard let policy = retention, !policy.isUnlimited else { return }
        // A run of passes is under way: its next pass is queued and takes this add's excess too.
        // Running one here as well would make the add's caller (a snap) wait for a whole pass.
        guard !retentionPassQueued else { return }
        let overCount = policy.maxPictures.map { storedCount > $0 } ?? false
        let overBytes = policy.maxBytes.map { storedBytes + storedThumbnailBytes > $0 } ?? false
        guard overCount || overBytes || policy.maxAgeMilliseconds != nil else { return }
        let passStarted = clock.monotonicNow()
        let removed: [Int64]
        do {
            removed = try removeForRetention(
                policy, nowWallMillis: clock.wallMillisecondsNow(), atMost: retentionPassSize)
        } catch {
            logger.warning("retention failed; will retry after the next picture", ["error": "\(error)"])
            retentionRun = nil
            return
        }
        if !removed.isEmpty {
            var run = retentionRun ?? RetentionRun(firstID: removed[0], started: passStarted)
            run.count += removed.count
            run.passes += 1
            run.lastID = removed[removed.count - 1]
            retentionRun = run
        }
        if removed.count == retentionPassSize {
            scheduleRetentionPass()
        } else if let run = retentionRun {
            retentionRun = nil
            logger.info(
                "retention removed pictures",
                [
                    "count": String(run.count), "first_id": String(run.firstID),
                    "last_id": String(run.lastID),
                    "passes": String(run.passes),
                    "ms": OpenTimings.milliseconds(clock.monotonicNow().nanoseconds(since: run.started)),
                ])
        }
    }

    /// Queues one more retention pass on the catalog's thread, after the work waiting there.
    private func scheduleRetentionPass() {
        guard !retentionPassQueued else { return }
        retentionPassQueued = true
        // The task runs isolated to this actor, so it is queued on the catalog's executor, which
        // runs its work in the order it arrived (ThreadExecutor).
        Task {
            self.retentionPassQueued = false
            self.applyRetentionIfExceeded()
        }
    }

    /// The bytes of the cached thumbnails of `id`.
    private func thumbnailBytes(of id: Int64) -> Int64 {
        thumbnailSizes[id]?.values.reduce(0, +) ?? 0
    }

    /// Throws `storageFull` if writing `byteCount` bytes would leave less than `minimumFreeBytes`
    /// free for unprivileged users on the media directory's file system; notes what it found
    /// for `/healthz` (`spaceShortage`).
    func checkFreeSpace(for byteCount: Int) throws {
        guard minimumFreeBytes > 0 else { return }
        let path = files.path
        let available = try Self.availableBytes(path: path)
        guard available - Int64(byteCount) >= minimumFreeBytes else {
            noteSpaceShortage(
                "\(available) bytes free on the media file system, under the floor of \(minimumFreeBytes) (min_free_bytes)"
            )
            throw CatalogError.storageFull(
                SystemError(
                    errno: ENOSPC,
                    call:
                        "statvfs \(path): \(available) bytes free, \(byteCount) more bytes would leave less than the floor of \(minimumFreeBytes)"
                ))
        }
        noteSpaceShortage(nil)
    }

    /// The bytes still free for the pictures (statvfs of the media directory), for `/metrics`.
    public nonisolated func freeBytes() throws -> Int64 {
        try Self.availableBytes(path: files.path)
    }

    /// The bytes an unprivileged user may still write on the file system of `path`.
    static func availableBytes(path: String) throws -> Int64 {
        var info = statvfs()
        do {
            _ = try syscall("statvfs \(path)") { statvfs(path, &info) }
        } catch {
            throw CatalogError(error)
        }
        // statvfs(3): f_bavail counts blocks of f_frsize bytes that an unprivileged user may use.
        let (product, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return overflow ? Int64.max : Int64(clamping: product)
    }

    /// Records why pictures are refused for space now (nil: they are not), and when it was found.
    func noteSpaceShortage(_ reason: String?) {
        let now = clock.monotonicNow()
        let before = space.withLock { state -> String? in
            let before = state.reason
            state.reason = reason
            state.checkedAt = now
            state.refreshing = false
            return before
        }
        let state = Self.storageState(reason)
        guard state != Self.storageState(before) else { return }
        var object = JSONObjectWriter()
        object.field("state", state)
        object.field("reason", reason)
        do {
            try recordEvent(.storageState, data: object.finished())
        } catch {
            // On a full disk the event may not fit either; the state is still in /healthz.
            logger.warning("could not record the storage state", ["state": state, "error": "\(error)"])
        }
    }

    /// `ok`, `low` (under the free-space floor) or `full`, as `storage.state` says it.
    static func storageState(_ shortage: String?) -> String {
        guard let shortage else { return "ok" }
        return shortage == fullDiskReason ? "full" : "low"
    }

    /// The shortage of a disk with no room at all.
    static let fullDiskReason = "the disk is full"

    /// Looks at the disk again: below `minimumFreeBytes` free (or nothing free at all, with the
    /// floor off) is a shortage. A failing statvfs leaves the last finding.
    func refreshSpaceShortage() {
        guard let available = try? Self.availableBytes(path: files.path) else {
            space.withLock { $0.refreshing = false }
            return
        }
        noteSpaceShortage(Self.spaceShortage(availableBytes: available, minimumFreeBytes: minimumFreeBytes))
    }

    /// Why pictures are refused with `available` bytes free: under the floor, or nothing free
    /// at all with the floor off; nil if they are not.
    static func spaceShortage(availableBytes available: Int64, minimumFreeBytes: Int64) -> String? {
        if minimumFreeBytes > 0, available < minimumFreeBytes {
            return
                "\(available) bytes free on the media file system, under the floor of \(minimumFreeBytes) (min_free_bytes)"
        }
        if minimumFreeBytes == 0, available == 0 { return fullDiskReason }
        return nil
    }

    /// How long `/healthz` trusts the last look at the disk before asking for another.
    static let spaceShortageMaxAgeNanoseconds: UInt64 = 5_000_000_000

    /// Why new pictures are refused for space (the free-space floor, or a full disk), or nil.
    ///
    /// Never waits: it answers from the last finding (every add and thumbnail looks, and so does
    /// the catalog's open) and, when that is older than five seconds, asks the catalog's thread
    /// to look again for the next caller. For `/healthz`, which runs on the event loop.
    public nonisolated func spaceShortage() -> String? {
        let now = clock.monotonicNow()
        let (reason, stale) = space.withLock { state -> (String?, Bool) in
            let stale =
                !state.refreshing
                && now.nanoseconds(since: state.checkedAt) > Self.spaceShortageMaxAgeNanoseconds
            if stale { state.refreshing = true }
            return (state.reason, stale)
        }
        if stale { Task { await self.refreshSpaceShortage() } }
        return reason
    }

    /// Creates the indexes retention's queries use, if they are missing.
    ///
    /// Not a schema migration: an index holds no data, `IF NOT EXISTS` makes this idempotent, and a
    /// program without it reads and writes the same tables (SQLite maintains the index for it).
    static func createRetentionIndex(_ database: Database) throws {
        // Partial: only pictures retention may remove (https://www.sqlite.org/partialindex.html).
        try database.execute(
            sql: """
                CREATE INDEX IF NOT EXISTS media_retention ON media (taken_at) WHERE keep = 0;
                CREATE INDEX IF NOT EXISTS media_unkept ON media (id) WHERE keep = 0;
                """)
    }

    private static func decodeIDAndBytes(_ row: Row) throws -> (id: Int64, bytes: Int64) {
        (try row.decode(at: 0), try row.decode(at: 1))
    }
}
