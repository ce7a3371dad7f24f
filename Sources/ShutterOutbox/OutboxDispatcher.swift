import ShutterCatalog
import ShutterSystem

/// Drains the event history into one sink: in id order, at least once, with backoff while the
/// destination is down, moving the sink's cursor in the catalog only after it acknowledged.
///
/// One task per sink on the cooperative pool, which only awaits: the catalog's reads run on the
/// catalog's thread and a sink's network work on the sink's own, so a sink that stays down holds
/// no thread and never delays capture, snaps, HTTP or the other sinks. The history's bounds
/// (`outbox_max_events`, `outbox_max_age_s`) bound what a sink that stays down can cost; what is
/// pruned before it was delivered is counted, logged and shown in `/status`.
public final class OutboxDispatcher: Sendable {
    public let sink: any OutboxSink
    private let catalog: MediaCatalog
    private let clock: any Clock
    private let backoff: RetryBackoff
    private let pageSize: Int
    /// At most one cursor commit this often while events flow (and one when the sink stops):
    /// each is a commit with an fsync on the catalog's thread, which also stores the pictures,
    /// and one a delivered event more than doubled that thread's commits during a burst at
    /// 30 fps. A crash between saves redelivers at most this long's events, which their ids let
    /// a receiver drop: at least once, as before.
    private let cursorSaveIntervalNanoseconds: UInt64
    private let logger: Logger
    private let state: LockedValue<OutboxSinkStatus>
    /// The newest event id recorded, from the event feed as each commit is published: `lag` is
    /// measured against it when asked, so a sink stuck on one event (its destination down) shows
    /// every event recorded meanwhile, not what it saw at its last page.
    private let newestEventID = LockedValue<Int64>(0)
    private let doorbell: AsyncStream<Void>.Continuation
    private let rings: LockedValue<AsyncStream<Void>?>
    private let running = LockedValue<
        (task: Task<Void, Never>?, subscription: Broadcast<[CatalogEvent]>.Subscription?)
    >(
        (nil, nil))

    public init(
        sink: any OutboxSink, catalog: MediaCatalog, clock: any Clock, backoff: RetryBackoff = RetryBackoff(),
        pageSize: Int = 100, cursorSaveIntervalNanoseconds: UInt64 = 1_000_000_000, logger: Logger
    ) {
        self.sink = sink
        self.cursorSaveIntervalNanoseconds = cursorSaveIntervalNanoseconds
        self.catalog = catalog
        self.clock = clock
        self.backoff = backoff
        self.pageSize = max(1, pageSize)
        self.logger = logger.with("sink", sink.name)
        self.state = LockedValue(OutboxSinkStatus(name: sink.name))
        // One pending ring is enough: the loop reads everything new whenever it wakes.
        let (stream, continuation) = AsyncStream.makeStream(
            of: Void.self, bufferingPolicy: .bufferingNewest(1))
        self.rings = LockedValue(stream)
        self.doorbell = continuation
    }

    /// What `/status` shows.
    public var status: OutboxSinkStatus {
        var status = state.withLock { $0 }
        status.connected = sink.isConnected
        status.lag = max(0, newestEventID.withLock { $0 } - status.cursor)
        return status
    }

    /// Starts delivering; events recorded from now on ring the doorbell.
    public func start() {
        let subscription = catalog.eventFeed.subscribe { [doorbell, newestEventID] events in
            if let newest = events.last?.id { newestEventID.withLock { $0 = max($0, newest) } }
            doorbell.yield()
        }
        guard
            let stream = rings.withLock({ stream in
                defer { stream = nil }
                return stream
            })
        else { return }
        let task = Task { await self.run(rings: stream) }
        running.withLock { $0 = (task, subscription) }
    }

    /// Stops after the attempt in flight (its cursor is kept if it was acknowledged).
    public func stop() async {
        let (task, subscription) = running.withLock { running in
            defer { running = (nil, nil) }
            return running
        }
        subscription?.cancel()
        doorbell.finish()
        task?.cancel()
        await task?.value
    }

    private func run(rings: AsyncStream<Void>) async {
        var doorbell = rings.makeAsyncIterator()
        guard let start = await startingCursor() else { return }
        var saved = SavedCursor(cursor: start, at: clock.monotonicNow())
        let cursor = await deliver(from: start, doorbell: &doorbell, saved: &saved)
        // The ring would find nobody listening; on a clock that never reaches its deadline (a
        // test's) its task would wait for ever, holding the clock (LeakSanitizer saw it).
        saved.ring?.cancel()
        if cursor != saved.cursor { await saveCursor(cursor) }
    }

    /// The cursor saved last, and when: what `saveCursorIfDue` compares with.
    private struct SavedCursor {
        var cursor: Int64
        var at: MonotonicInstant
        /// A ring is on its way for when the next save is due: one is enough.
        var ringScheduled: Bool { ring != nil }
        /// The task ringing the doorbell when the next save is due; cancelled when delivery stops.
        var ring: Task<Void, Never>?
    }

    /// Saves `cursor` if the last save is at least `cursorSaveIntervalNanoseconds` old; else
    /// rings the doorbell once that time has come, so an idle sink saves it then.
    private func saveCursorIfDue(_ cursor: Int64, _ saved: inout SavedCursor) async {
        guard cursor != saved.cursor else { return }
        let now = clock.monotonicNow()
        let elapsed = now.nanoseconds(since: saved.at)
        guard elapsed >= cursorSaveIntervalNanoseconds else {
            guard !saved.ringScheduled else { return }
            let deadline = now.advanced(by: cursorSaveIntervalNanoseconds - elapsed)
            saved.ring = Task { [clock, doorbell] in
                try? await clock.sleep(until: deadline)
                doorbell.yield()
            }
            return
        }
        await saveCursor(cursor)
        saved = SavedCursor(cursor: cursor, at: now)
    }

    /// Delivers until stopped; returns the cursor reached (acknowledged, perhaps not yet saved).
    private func deliver(
        from start: Int64, doorbell: inout AsyncStream<Void>.Iterator, saved: inout SavedCursor
    ) async -> Int64 {
        var cursor = start
        var failuresInRow = 0
        while !Task.isCancelled {
            let page: CatalogEventPage
            do {
                page = try await catalog.events(after: cursor, limit: pageSize, types: sink.eventTypes)
                failuresInRow = 0
            } catch {
                failuresInRow += 1
                noteFailure(error, delivering: nil)
                guard await pause(afterFailures: failuresInRow) else { return cursor }
                continue
            }
            if page.missedSome {
                cursor = await skipPruned(from: cursor, page: page)
                saved = SavedCursor(cursor: cursor, at: clock.monotonicNow())
                continue
            }
            noteNewest(page.latestID)
            if page.events.isEmpty {
                // Nothing this sink wants up to the newest event: pass over the rest.
                if page.latestID > cursor {
                    cursor = page.latestID
                    state.withLock { $0.cursor = cursor }
                }
                await saveCursorIfDue(cursor, &saved)
                guard await doorbell.next() != nil else { return cursor }
                continue
            }
            for event in page.events {
                guard await deliverUntilAcknowledged(event) else { return cursor }
                cursor = event.id
                state.withLock {
                    $0.cursor = cursor
                    $0.delivered += 1
                }
            }
            await saveCursorIfDue(cursor, &saved)
        }
        return cursor
    }

    /// Where a sink resumes: its saved cursor, or, the first time, the newest event (a new sink
    /// starts with what happens from now on, not with the whole history).
    private func startingCursor() async -> Int64? {
        var failuresInRow = 0
        while !Task.isCancelled {
            do {
                noteNewest(await catalog.latestEventID())
                if let saved = try await catalog.sinkCursor(sink.name) {
                    state.withLock { $0.cursor = saved }
                    return saved
                }
                let latest = await catalog.latestEventID()
                try await catalog.setSinkCursor(sink.name, to: latest)
                state.withLock { $0.cursor = latest }
                logger.info("sink starts with the events from now on", ["cursor": String(latest)])
                return latest
            } catch {
                failuresInRow += 1
                noteFailure(error, delivering: nil)
                guard await pause(afterFailures: failuresInRow) else { return nil }
            }
        }
        return nil
    }

    /// Tries `event` until the sink acknowledges it; false if the dispatcher stopped first.
    private func deliverUntilAcknowledged(_ event: CatalogEvent) async -> Bool {
        var failuresInRow = 0
        while !Task.isCancelled {
            do {
                try await sink.deliver(event)
                if failuresInRow > 0 {
                    logger.notice(
                        "sink delivered again",
                        ["event_id": String(event.id), "attempts": String(failuresInRow + 1)])
                    state.withLock { $0.lastError = nil }
                }
                return true
            } catch {
                failuresInRow += 1
                noteFailure(error, delivering: event, firstInRow: failuresInRow == 1)
                // A sink that already waited for its destination was paced by that wait.
                let waited = (error as? any OutboxDestinationWaitError)?.waitedForDestination == true
                guard await pause(afterFailures: waited ? 1 : failuresInRow) else { return false }
            }
        }
        return false
    }

    /// Moves a cursor that the history left behind to where the history starts, counting what was
    /// lost; a cursor beyond the history (another data directory) restarts from the newest event.
    private func skipPruned(from cursor: Int64, page: CatalogEventPage) async -> Int64 {
        let resumeAt = cursor > page.latestID ? page.latestID : page.prunedThrough
        let dropped = UInt64(max(0, resumeAt - cursor))
        state.withLock {
            $0.dropped += dropped
            $0.cursor = resumeAt
        }
        logger.warning(
            "events left the history before the sink delivered them",
            ["dropped": String(dropped), "from": String(cursor + 1), "to": String(resumeAt)])
        await saveCursor(resumeAt)
        return resumeAt
    }

    /// The history reached `id` (a page read, or the start): events published before the
    /// subscription began are counted too.
    private func noteNewest(_ id: Int64) {
        newestEventID.withLock { $0 = max($0, id) }
    }

    private func saveCursor(_ cursor: Int64) async {
        do {
            try await catalog.setSinkCursor(sink.name, to: cursor)
        } catch {
            // Kept in memory; after a restart the events since the saved cursor come again.
            logger.warning(
                "could not save the sink's cursor", ["cursor": String(cursor), "error": "\(error)"])
        }
    }

    private func noteFailure(_ error: any Error, delivering event: CatalogEvent?, firstInRow: Bool = true) {
        let description = String(describing: error)
        state.withLock {
            $0.failures += 1
            $0.lastError = description
        }
        // Once per outage, not once per retry; /status has the count and the latest error.
        if firstInRow {
            logger.warning(
                "sink failed; retrying with backoff",
                ["event_id": event.map { String($0.id) } ?? "-", "error": description])
        }
    }

    /// Waits out the backoff; false if the dispatcher stopped meanwhile.
    private func pause(afterFailures failures: Int) async -> Bool {
        let delay = backoff.delay(afterFailures: failures, unit: Double.random(in: 0..<1))
        do {
            try await clock.sleep(until: clock.monotonicNow().advanced(by: delay))
            return true
        } catch {
            return false
        }
    }
}
