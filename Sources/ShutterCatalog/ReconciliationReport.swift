/// What opening the catalog repaired after a crash or an outside change to the media directory.
public struct ReconciliationReport: Equatable, Sendable {
    /// Unfinished `.<id>.jpg.tmp` files removed (a crash during a write).
    public var removedTemporaryFiles: [String]
    /// Ids of `<id>.jpg` files removed because no row described them (a crash before the insert).
    public var removedOrphanFileIDs: [Int64]
    /// Ids of rows removed because their file was gone.
    public var removedRowIDs: [Int64]

    public init(removedTemporaryFiles: [String], removedOrphanFileIDs: [Int64], removedRowIDs: [Int64]) {
        self.removedTemporaryFiles = removedTemporaryFiles
        self.removedOrphanFileIDs = removedOrphanFileIDs
        self.removedRowIDs = removedRowIDs
    }

    /// Whether nothing needed repair.
    public var isClean: Bool {
        removedTemporaryFiles.isEmpty && removedOrphanFileIDs.isEmpty && removedRowIDs.isEmpty
    }
}
