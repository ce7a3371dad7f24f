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
