import ShutterSystem

/// What the catalog last found about its disk's room for new pictures (see
/// `MediaCatalog.spaceShortage()`).
struct SpaceShortage: Sendable {
    /// Why pictures are refused for space, or nil when they are not.
    var reason: String?
    /// When the disk was last looked at.
    var checkedAt = MonotonicInstant(nanoseconds: 0)
    /// A look has been asked of the catalog's thread and has not finished.
    var refreshing = false
}
