/// What happened, as `/events` and every outbox sink name it.
public enum CatalogEventType: String, CaseIterable, Sendable, Codable {
    case pictureCreated = "picture.created"
    case pictureDeleted = "picture.deleted"
    case pictureUpdated = "picture.updated"
    case jobCreated = "job.created"
    case jobUpdated = "job.updated"
    case jobEnded = "job.ended"
    case cameraState = "camera.state"
    case storageState = "storage.state"
}

/// Why a picture went away, as `picture.deleted` says it.
public enum PictureRemovalReason: String, Sendable {
    /// A client asked (`DELETE /library/{id}`).
    case request
    /// Retention's limits.
    case retention
    /// Its file was missing when the catalog opened (a crash, or a hand in the media directory).
    case missingFile = "missing_file"
}

/// One entry of the event history: a change the catalog committed, with the id that orders it.
///
/// Ids come from one AUTOINCREMENT sequence in the catalog, so they only grow, survive restarts
/// and are never handed out twice: a client's `Last-Event-ID` and a sink's cursor stay
/// meaningful across restarts. `data` is a JSON object, written in the same transaction as the
/// change itself, so an event is never lost and never announces what was not stored.
public struct CatalogEvent: Sendable, Equatable {
    public var id: Int64
    public var type: CatalogEventType
    /// Wall milliseconds since 1970 when it was recorded.
    public var at: Int64
    /// A JSON object.
    public var data: String

    public init(id: Int64, type: CatalogEventType, at: Int64, data: String) {
        self.id = id
        self.type = type
        self.at = at
        self.data = data
    }
}

/// A page of the event history after a cursor.
public struct CatalogEventPage: Sendable, Equatable {
    /// The events after the cursor, oldest first.
    public var events: [CatalogEvent]
    /// True when events after the cursor were already pruned (by count or age), so the page does
    /// not start right after it: the reader missed something and must start over.
    public var missedSome: Bool
    /// The newest id the history has held (0 if none): where a reader that starts over resumes.
    public var latestID: Int64
    /// Every id up to this one has been pruned (or never existed).
    public var prunedThrough: Int64

    public init(events: [CatalogEvent], missedSome: Bool, latestID: Int64, prunedThrough: Int64 = 0) {
        self.events = events
        self.missedSome = missedSome
        self.latestID = latestID
        self.prunedThrough = prunedThrough
    }
}

/// How much event history the catalog keeps: the replay window of `/events` and how far a sink
/// may fall behind before events are dropped for it.
public struct EventHistoryLimits: Sendable, Equatable {
    public var maxEvents: Int
    /// Nil keeps events of any age.
    public var maxAgeMilliseconds: Int64?

    public init(maxEvents: Int = 100_000, maxAgeMilliseconds: Int64? = 7 * 24 * 3_600_000) {
        self.maxEvents = max(1, maxEvents)
        self.maxAgeMilliseconds = maxAgeMilliseconds
    }
}
