import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

extension MediaCatalog {
    /// Rows read per query while looking for pictures to remove by count or bytes.
    static let retentionBatchSize: Int64 = 256

    /// Pictures retention may remove that were taken before the first parameter and no later than
    /// the second.
    ///
    /// No ORDER BY: with one, SQLite prefers walking the whole table in rowid order to sorting, and
    /// this query must instead cost one seek of the partial index media_retention when nothing
    /// expired; the few rows found are sorted in memory.
    static let expiredSQL = "SELECT id, bytes FROM media WHERE keep = 0 AND taken_at < ? AND taken_at <= ?"

    /// Up to the third parameter of the pictures retention may remove with an id above the first
    /// parameter, taken no later than the second, in id order.
    ///
    /// INDEXED BY walks media_unkept from the cursor: kept pictures are not in it, so however many
    /// there are, a batch costs only its own rows, never a sort (https://www.sqlite.org/lang_indexedby.html).
    static let oldestSQL = """
        SELECT id, bytes FROM media INDEXED BY media_unkept
        WHERE keep = 0 AND id > ? AND taken_at <= ? ORDER BY id LIMIT ?
        """

    /// Removes what `policy` says must go, oldest (smallest id) first; returns the removed ids.
    ///
    /// Kept pictures and pictures taken less than `minimumAgeMilliseconds` before `nowWallMillis`
    /// are never removed, but they count towards the count and byte limits. Rows go in one
    /// transaction, then files: as in `delete`, a crash in between leaves files without rows,
    /// invisible to clients and removed at the next open, never a row without its file.
    @discardableResult
    public func applyRetention(_ policy: RetentionPolicy, nowWallMillis: Int64) throws -> [Int64] {
        guard !policy.isUnlimited else { return [] }
        // A picture taken at or before this instant is old enough to be removed.
        let oldEnough = nowWallMillis.subtractingReportingOverflow(max(0, policy.minimumAgeMilliseconds))
            .partialValue
        var removed: [(id: Int64, bytes: Int64)] = []
        do {
            if let maxAge = policy.maxAgeMilliseconds {
                let expired = nowWallMillis.subtractingReportingOverflow(max(0, maxAge)).partialValue
                removed = try database.fetchAll(
                    sql: Self.expiredSQL, arguments: [expired, oldEnough], Self.decodeIDAndBytes
                ).sorted { $0.id < $1.id }
            }
            let expiredIDs = Set(removed.map(\.id))
            var excessCount = Int64(policy.maxPictures.map { storedCount - removed.count - $0 } ?? 0)
            var excessBytes =
                policy.maxBytes.map { storedBytes - removed.reduce(0) { $0 + $1.bytes } - $0 } ?? 0
            var cursor: Int64 = 0
            while excessCount > 0 || excessBytes > 0 {
                let batch = try database.fetchAll(
                    sql: Self.oldestSQL, arguments: [cursor, oldEnough, Self.retentionBatchSize],
                    Self.decodeIDAndBytes)
                guard let last = batch.last else { break }
                cursor = last.id
                for row in batch where !expiredIDs.contains(row.id) {
                    guard excessCount > 0 || excessBytes > 0 else { break }
                    removed.append(row)
                    excessCount -= 1
                    excessBytes -= row.bytes
                }
            }
            guard !removed.isEmpty else { return [] }
            try database.inTransaction {
                let statement = try database.cachedStatement(sql: "DELETE FROM media WHERE id = ?")
                for row in removed {
                    try statement.execute(arguments: [row.id])
                }
            }
        } catch {
            throw CatalogError(error)
        }
        removed.sort { $0.id < $1.id }
        storedCount -= removed.count
        storedBytes -= removed.reduce(0) { $0 + $1.bytes }
        changeCounter += 1
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
        logger.info(
            "retention removed pictures",
            [
                "count": String(removed.count), "first_id": String(removed[0].id),
                "last_id": String(removed[removed.count - 1].id),
            ])
        return removed.map(\.id)
    }

    /// Applies `retention` if a limit could be exceeded: counts and bytes are checked in memory,
    /// an age limit costs one indexed query.
    ///
    /// The picture just added is stored whatever happens here, so a failure is logged, not thrown.
    func applyRetentionIfExceeded() {
        guard let policy = retention, !policy.isUnlimited else { return }
        let overCount = policy.maxPictures.map { storedCount > $0 } ?? false
        let overBytes = policy.maxBytes.map { storedBytes > $0 } ?? false
        guard overCount || overBytes || policy.maxAgeMilliseconds != nil else { return }
        do {
            try applyRetention(policy, nowWallMillis: clock.wallMillisecondsNow())
        } catch {
            logger.warning("retention failed; will retry after the next picture", ["error": "\(error)"])
        }
    }

    /// Throws `storageFull` if writing `byteCount` bytes would leave less than `minimumFreeBytes`
    /// free for unprivileged users on the media directory's file system.
    func checkFreeSpace(for byteCount: Int) throws {
        guard minimumFreeBytes > 0 else { return }
        let path = files.path
        var info = statvfs()
        do {
            _ = try syscall("statvfs \(path)") { statvfs(path, &info) }
        } catch {
            throw CatalogError(error)
        }
        // statvfs(3): f_bavail counts blocks of f_frsize bytes that an unprivileged user may use.
        let (product, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        let available = overflow ? Int64.max : Int64(clamping: product)
        guard available - Int64(byteCount) >= minimumFreeBytes else {
            throw CatalogError.storageFull(
                SystemError(
                    errno: ENOSPC,
                    call:
                        "statvfs \(path): \(available) bytes free, \(byteCount) more bytes would leave less than the floor of \(minimumFreeBytes)"
                ))
        }
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
