/// One page of a catalog listing.
public struct MediaPage: Equatable, Sendable {
    /// The pictures, in the order the query asked for.
    public var items: [MediaRecord]
    /// Whether another page follows in the same direction.
    public var hasMore: Bool

    public init(items: [MediaRecord], hasMore: Bool) {
        self.items = items
        self.hasMore = hasMore
    }
}
