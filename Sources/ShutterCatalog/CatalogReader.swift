import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Reads pages of the listing on connections and threads of their own, beside the catalog's.
///
/// A page nobody asked for before (a script paging with `next`, a cursor picked at random) is
/// read here, handed over from the event loop and answered back to it with no task in between:
/// through the catalog's actor it took four thread hand-offs (loop, pool, catalog, pool, loop),
/// and it waited behind every snap, delete and retention pass on the catalog's thread. WAL lets
/// these connections read while the catalog writes (https://www.sqlite.org/wal.html#concurrency);
/// each statement reads the last state committed when it starts.
///
/// One lane per core, up to two: a lane is a read-only connection used only on its own thread
/// (`ThreadExecutor`). A page goes to the lane with the fewest pages queued, so a slow read (a
/// filter that walks far) does not hold up the next. The connections close when the reader is
/// released and each queue has run.
public final class CatalogReader: @unchecked Sendable {
    // @unchecked Sendable: each lane's `database` is touched only by closures run on that lane's
    // thread, one after another; `queued` is behind its lock.
    private struct Lane {
        let executor: ThreadExecutor
        let database: Database
    }

    private let lanes: [Lane]
    /// Pages handed to each lane and not yet read.
    private let queued: LockedValue<[Int]>

    /// Opens `lanes` read-only connections (by default one per core, up to two) to the catalog's
    /// database at `path`, which must exist in WAL mode.
    public init(path: String, lanes count: Int = CatalogReader.defaultLaneCount) throws {
        do {
            lanes = try (0..<max(1, count)).map { index in
                Lane(
                    executor: try ThreadExecutor(name: "shutter-reader\(index)"),
                    database: try Database(path: path, readOnly: true))
            }
        } catch {
            throw CatalogError(error)
        }
        queued = LockedValue(Array(repeating: 0, count: lanes.count))
    }

    /// One lane per online core, at most two: a page is CPU work once its rows are cached, and
    /// more lanes than cores would only take turns.
    public static var defaultLaneCount: Int {
        min(2, max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))))
    }

    /// Reads one page as `MediaCatalog.page` does, on a lane's thread, and calls `completion`
    /// with it there: `completion` must not block (it writes the answer and hands it on).
    public func page(
        before: Int64? = nil, after: Int64? = nil, limit: Int, jobID: Int64? = nil, label: String? = nil,
        keep: Bool? = nil, takenSince: Int64? = nil, takenUntil: Int64? = nil,
        completion: @escaping @Sendable (Result<MediaPage, CatalogError>) -> Void
    ) {
        let index = queued.withLock { queued in
            let index = queued.indices.min { queued[$0] < queued[$1] } ?? 0
            queued[index] += 1
            return index
        }
        lanes[index].executor.submit {
            let result = Result {
                try MediaCatalog.page(
                    in: self.lanes[index].database, before: before, after: after, limit: limit, jobID: jobID,
                    label: label, keep: keep, takenSince: takenSince, takenUntil: takenUntil)
            }.mapError { CatalogError($0) }
            self.queued.withLock { $0[index] -= 1 }
            completion(result)
        }
    }
}
