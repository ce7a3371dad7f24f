/// What opening the catalog repaired after a crash or an outside change to the media directory.
public struct ReconciliationReport: Equatable, Sendable {
    /// Unfinished `.<id>.jpg.tmp` files removed (a crash during a write).
    public var removedTemporaryFiles: [String]
    /// Ids of `<id>.jpg` files removed because no row described them (a crash before the insert).
    public var removedOrphanFileIDs: [Int64]
    /// Ids of rows removed because their file was gone.
    public var removedRowIDs: [Int64]
    /// Names in `thumbs/` removed: unfinished thumbnail writes (`.*.tmp`) and thumbnails of
    /// pictures that are gone.
    public var removedThumbnailFiles: [String]

    public init(
        removedTemporaryFiles: [String], removedOrphanFileIDs: [Int64], removedRowIDs: [Int64],
        removedThumbnailFiles: [String] = []
    ) {
        self.removedTemporaryFiles = removedTemporaryFiles
        self.removedOrphanFileIDs = removedOrphanFileIDs
        self.removedRowIDs = removedRowIDs
        self.removedThumbnailFiles = removedThumbnailFiles
    }

    /// Whether nothing needed repair.
    public var isClean: Bool {
        removedTemporaryFiles.isEmpty && removedOrphanFileIDs.isEmpty && removedRowIDs.isEmpty
            && removedThumbnailFiles.isEmpty
    }
}
