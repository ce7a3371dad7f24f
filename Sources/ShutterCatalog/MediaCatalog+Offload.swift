extension MediaCatalog {
    /// Records that the S3 store has acknowledged picture `id` (its record then says
    /// `"stored": ["local","s3"]`, and offload may free its file); false if there is no such
    /// picture or it was marked already.
    ///
    /// No event: the picture itself did not change, and a `picture.updated` would have the S3
    /// sink upload it again.
    @discardableResult
    public func markUploaded(id: Int64) throws -> Bool {
        do {
            try database.cachedStatement(sql: "UPDATE media SET uploaded = 1 WHERE id = ? AND uploaded = 0")
                .execute(arguments: [id])
            guard database.changesCount > 0 else { return false }
            // Listings show `stored`, so their ETags must change with it.
            noteListingChanged()
            return true
        } catch {
            throw CatalogError(error)
        }
    }
}
