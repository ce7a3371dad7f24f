import ShutterSystem

/// Reads pages of the listing on a connection and a thread of their own, beside the catalog's.
///
/// A page nobody asked for before (a script paging with `next`, a cursor picked at random) is
/// read here, handed over from the event loop and answered back to it with no task in between:
/// through the catalog's actor it took four thread hand-offs (loop, pool, catalog, pool, loop),
/// and it waited behind every snap, delete and retention pass on the catalog's thread. WAL lets
/// this connection read while the catalog writes (https://www.sqlite.org/wal.html#concurrency);
/// each statement reads the last state committed when it starts.
///
/// The connection is used only on the reader's thread (`executor`); it closes when the reader
/// is released and its queue has run.
public final class CatalogReader: @unchecked Sendable {
    // @unchecked Sendable: `database` is touched only by closures run on `executor`'s thread, one
    // after another.
    private let executor: ThreadExecutor
    private let database: Database

    /// Opens a read-only connection to the catalog's database at `path`, which must exist in WAL mode.
    public init(path: String) throws {
        do {
            database = try Database(path: path, readOnly: true)
            executor = try ThreadExecutor(name: "shutter-reader")
        } catch {
            throw CatalogError(error)
        }
    }

    /// Reads one page as `MediaCatalog.page` does, on the reader's thread, and calls `completion`
    /// with it there: `completion` must not block (it writes the answer and hands it on).
    public func page(
        before: Int64? = nil, after: Int64? = nil, limit: Int, jobID: Int64? = nil, label: String? = nil,
        keep: Bool? = nil, takenSince: Int64? = nil, takenUntil: Int64? = nil,
        completion: @escaping @Sendable (Result<MediaPage, CatalogError>) -> Void
    ) {
        executor.submit {
            completion(
                Result {
                    try MediaCatalog.page(
                        in: self.database, before: before, after: after, limit: limit, jobID: jobID,
                        label: label,
                        keep: keep, takenSince: takenSince, takenUntil: takenUntil)
                }.mapError { CatalogError($0) })
        }
    }
}
