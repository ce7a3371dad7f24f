import ShutterSystem

/// The event history: every change a client or a sink cares about, in the `events` table, written
/// in the transaction of the change itself and published to `eventFeed` once committed.
extension MediaCatalog {
    /// Inserts one event inside the caller's transaction and returns it with its id.
    static func insertEvent(
        _ database: Database, _ type: CatalogEventType, at: Int64, data: String
    ) throws -> CatalogEvent {
        try database.cachedStatement(sql: "INSERT INTO events (type, at, data) VALUES (?, ?, ?)")
            .execute(arguments: [type.rawValue, at, data])
        return CatalogEvent(id: database.lastInsertedRowID, type: type, at: at, data: data)
    }

    /// Inserts one event inside the caller's transaction, timed by the catalog's clock.
    func insertEvent(_ type: CatalogEventType, data: String) throws -> CatalogEvent {
        try Self.insertEvent(database, type, at: clock.wallMillisecondsNow(), data: data)
    }

    /// Tells subscribers about events whose transaction has committed, then keeps the history
    /// within its limits.
    func published(_ events: [CatalogEvent]) {
        guard let last = events.last else { return }
        eventHistory.count += events.count
        eventHistory.latestID = last.id
        eventFeed.publish(events)
        pruneEventsIfNeeded()
    }

    /// Records an event that is not part of another change (the camera's state), in a
    /// transaction of its own, and publishes it.
    @discardableResult
    public func recordEvent(_ type: CatalogEventType, data: String) throws -> CatalogEvent {
        do {
            let event = try database.inTransaction { try insertEvent(type, data: data) }
            published([event])
            return event
        } catch {
            throw CatalogError(error)
        }
    }

    /// Up to `limit` events with an id above `after`, oldest first, only of `types` when given.
    ///
    /// `missedSome` is true when events after `after` were pruned, or when `after` is beyond
    /// anything this catalog ever recorded (a cursor from another data directory).
    public func events(
        after: Int64, limit: Int, types: Set<CatalogEventType>? = nil
    ) throws -> CatalogEventPage {
        guard limit >= 1 else { throw CatalogError.invalidArgument("limit \(limit) is below 1") }
        var sql = "SELECT id, type, at, data FROM events WHERE id > ?"
        var arguments: [DatabaseValue] = [.integer(after)]
        if let types {
            guard !types.isEmpty else {
                return CatalogEventPage(
                    events: [], missedSome: isMissed(after: after), latestID: eventHistory.latestID,
                    prunedThrough: eventHistory.prunedThrough)
            }
            sql += " AND type IN (" + Array(repeating: "?", count: types.count).joined(separator: ",") + ")"
            arguments += types.map(\.rawValue).sorted().map { .text($0) }
        }
        sql += " ORDER BY id LIMIT ?"
        arguments.append(.integer(Int64(min(limit, Int(Int32.max)))))
        do {
            let events = try database.fetchAll(sql: sql, arguments: StatementArguments(arguments)) { row in
                let typeName: String = try row.decode(at: 1)
                return (
                    id: try row.decode(Int64.self, at: 0), type: typeName,
                    at: try row.decode(Int64.self, at: 2),
                    data: try row.decode(String.self, at: 3)
                )
            }.compactMap { row -> CatalogEvent? in
                // A type a newer build wrote and this one does not know is skipped, not fatal.
                CatalogEventType(rawValue: row.type).map {
                    CatalogEvent(id: row.id, type: $0, at: row.at, data: row.data)
                }
            }
            return CatalogEventPage(
                events: events, missedSome: isMissed(after: after), latestID: eventHistory.latestID,
                prunedThrough: eventHistory.prunedThrough)
        } catch {
            throw CatalogError(error)
        }
    }

    /// The newest event id (0 before the first event): where a reader that wants only what
    /// happens from now on starts.
    public func latestEventID() -> Int64 { eventHistory.latestID }

    /// How many events the history holds, and the id of the newest event already pruned.
    public func eventHistoryState() -> (count: Int, latestID: Int64, prunedThrough: Int64) {
        (eventHistory.count, eventHistory.latestID, eventHistory.prunedThrough)
    }

    /// Sets how much history is kept; prunes at once to the new limits.
    public func setEventHistoryLimits(_ limits: EventHistoryLimits) {
        eventHistory.limits = limits
        eventHistory.nextAgeCheck = nil
        pruneEventsIfNeeded(force: true)
    }

    private func isMissed(after: Int64) -> Bool {
        after < eventHistory.prunedThrough || after > eventHistory.latestID
    }

    /// Removes the oldest events past the count limit (in steps, not one row per insert) and,
    /// at most once a minute, those older than the age limit.
    func pruneEventsIfNeeded(force: Bool = false) {
        let limits = eventHistory.limits
        // Deleting a little below the limit at a time keeps the delete off every insert.
        let slack = max(1, limits.maxEvents / 64)
        var cutoff: Int64? = nil
        if eventHistory.count > limits.maxEvents + (force ? 0 : slack) {
            cutoff = eventHistory.latestID - Int64(limits.maxEvents)
        }
        let now = clock.monotonicNow()
        if let maxAge = limits.maxAgeMilliseconds,
            force || eventHistory.nextAgeCheck.map({ now >= $0 }) ?? true
        {
            eventHistory.nextAgeCheck = now.advanced(by: 60_000_000_000)
            let oldest = clock.wallMillisecondsNow() - maxAge
            do {
                // Ids follow time, so the first young event marks the end of the old ones; the
                // walk from the front is short because the old ones are removed as they age.
                let firstYoung = try database.fetchOne(
                    sql: "SELECT id FROM events WHERE at >= ? ORDER BY id LIMIT 1", arguments: [oldest]
                ) { try $0.decode(Int64.self, at: 0) }
                let ageCutoff = (firstYoung ?? eventHistory.latestID + 1) - 1
                cutoff = max(cutoff ?? 0, ageCutoff)
            } catch {
                logger.warning("could not look for expired events", ["error": "\(error)"])
            }
        }
        guard let cutoff, cutoff > eventHistory.prunedThrough else { return }
        do {
            try database.cachedStatement(sql: "DELETE FROM events WHERE id <= ?").execute(arguments: [cutoff])
            eventHistory.count = max(0, eventHistory.count - database.changesCount)
            eventHistory.prunedThrough = cutoff
            counters.eventsPruned.add(UInt64(database.changesCount), ordering: .relaxed)
        } catch {
            // The history is only longer than asked; the next insert tries again.
            logger.warning("could not prune the event history", ["error": "\(error)"])
        }
    }

    /// What the history holds at open: its size, its newest id, and what was pruned before.
    static func loadEventHistory(_ database: Database, limits: EventHistoryLimits) throws -> EventHistory {
        let (count, oldest, newest) =
            try database.fetchOne(
                sql: "SELECT count(*), coalesce(min(id), 0), coalesce(max(id), 0) FROM events"
            ) {
                (
                    Int(try $0.decode(Int64.self, at: 0)), try $0.decode(Int64.self, at: 1),
                    try $0.decode(Int64.self, at: 2)
                )
            } ?? (0, 0, 0)
        // Every id ever handed out, even when every event was pruned (AUTOINCREMENT).
        let sequence =
            try database.fetchOne(sql: "SELECT seq FROM sqlite_sequence WHERE name = 'events'") {
                try $0.decode(Int64.self, at: 0)
            } ?? 0
        let latest = max(newest, sequence)
        return EventHistory(
            limits: limits, count: count, latestID: latest, prunedThrough: count == 0 ? latest : oldest - 1)
    }

    // MARK: - Sink cursors

    /// The id of the last event the sink `name` delivered, or nil if it never delivered one.
    public func sinkCursor(_ name: String) throws -> Int64? {
        do {
            return try database.fetchOne(
                sql: "SELECT event_id FROM sink_cursors WHERE sink = ?", arguments: [name]
            ) { try $0.decode(Int64.self, at: 0) }
        } catch {
            throw CatalogError(error)
        }
    }

    /// Records that the sink `name` delivered everything up to `eventID`; never moves back.
    public func setSinkCursor(_ name: String, to eventID: Int64) throws {
        do {
            try database.cachedStatement(
                sql: """
                    INSERT INTO sink_cursors (sink, event_id) VALUES (?, ?)
                    ON CONFLICT (sink) DO UPDATE SET event_id = max(event_id, excluded.event_id)
                    """
            ).execute(arguments: [name, eventID])
        } catch {
            throw CatalogError(error)
        }
    }
}

/// The catalog's bookkeeping of its event history, kept in step with the table.
struct EventHistory {
    var limits: EventHistoryLimits
    var count: Int
    var latestID: Int64
    /// Every id up to this one is gone from the table (or never existed).
    var prunedThrough: Int64
    /// When the next age check is due; nil: at the next chance.
    var nextAgeCheck: MonotonicInstant? = nil
}

extension JobRecord {
    /// The job as `job.*` events carry it: the stored row, with its spec as given.
    var eventJSON: String {
        var object = JSONObjectWriter()
        object.field("id", id)
        object.rawField("spec", specJSON)
        object.field("label", label)
        object.field("state", state)
        object.field("taken", taken)
        object.field("missed", missed)
        object.field("last_failure", lastFailure)
        object.field("last_failure_kind", lastFailureKind)
        object.field("created_at", Timestamp.iso8601(millisecondsSince1970: createdAt))
        object.field("finished_at", finishedAt.map { Timestamp.iso8601(millisecondsSince1970: $0) })
        return object.finished()
    }
}

/// The `picture.deleted` payload. `taken_at` lets a sink find what it made of the picture (the
/// S3 sink's object key has the date in it) after the row is gone.
func pictureDeletedJSON(id: Int64, reason: PictureRemovalReason, takenAt: Int64?) -> String {
    var object = JSONObjectWriter()
    object.field("id", id)
    object.field("reason", reason.rawValue)
    object.field("taken_at", takenAt.map { Timestamp.iso8601(millisecondsSince1970: $0) })
    return object.finished()
}

extension MediaCatalog {
    /// Deletes picture `id`'s row inside the caller's transaction; returns when it was taken, or
    /// nil if there was no such row.
    static func deletePictureRow(_ database: Database, id: Int64) throws -> Int64? {
        // RETURNING (SQLite 3.35): the row's taken_at for its event, in the same statement.
        try database.fetchOne(sql: "DELETE FROM media WHERE id = ? RETURNING taken_at", arguments: [id]) {
            try $0.decode(Int64.self, at: 0)
        }
    }
}
