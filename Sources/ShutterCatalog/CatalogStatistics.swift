import Synchronization

/// Totals over the whole catalog.
public struct CatalogStatistics: Equatable, Sendable {
    /// How many pictures there are.
    public var count: Int
    /// The sum of their sizes in bytes.
    public var totalBytes: Int64
    /// The id of the newest picture, or nil when the catalog is empty.
    public var newestID: Int64?
    /// The sum of the sizes of their cached thumbnails, in bytes.
    public var thumbnailBytes: Int64

    public init(count: Int, totalBytes: Int64, newestID: Int64?, thumbnailBytes: Int64 = 0) {
        self.count = count
        self.totalBytes = totalBytes
        self.newestID = newestID
        self.thumbnailBytes = thumbnailBytes
    }
}

/// Counters of what the catalog did, for `/metrics`; read from any thread.
public final class CatalogCounters: Sendable {
    // Relaxed: each is read alone, for display.
    let removedByRetention = Atomic<UInt64>(0)

    /// Pictures retention has removed since the catalog opened.
    public var picturesRemovedByRetention: UInt64 { removedByRetention.load(ordering: .relaxed) }

    let eventsPruned = Atomic<UInt64>(0)

    /// Events removed from the history by its count or age limit since the catalog opened.
    public var eventsPrunedFromHistory: UInt64 { eventsPruned.load(ordering: .relaxed) }
}
