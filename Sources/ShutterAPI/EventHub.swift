import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// The one subscriber to the catalog's event feed: it hops each committed batch onto the event
/// loop, frames every event once, and hands it to every open `/events` stream and to the
/// long-poll waiters.
///
/// Streams cost nothing while nothing happens: no thread, no timer of their own. The loop's tick
/// calls `tick()`, which looks at the streams only when the earliest keep-alive is due.
public final class EventHub: @unchecked Sendable {
    // @unchecked Sendable: `streams`, `latestID` and `nextKeepAliveCheck` are read and written
    // only on `queue`'s thread (the event loop); `subscription` is set once by `start()` before
    // the server serves; the rest is immutable or thread-safe.

    /// The limits of the change feed.
    public struct Settings: Sendable, Equatable {
        /// Open `/events` streams; more are answered 503.
        public var maxEventStreams: Int
        /// Long-polls (`wait=`) waiting at once; more are answered 503.
        public var maxWaiters: Int
        /// A stream that reads nothing of what is queued for it for this long is dropped.
        public var stallTimeoutMilliseconds: Int
        /// What one stream may hold, and its keep-alive.
        var streamLimits: EventStreamState.Limits

        public init(
            maxEventStreams: Int = 1024, maxWaiters: Int = 1024, keepAliveMilliseconds: Int = 15_000,
            stallTimeoutMilliseconds: Int = 10_000
        ) {
            self.maxEventStreams = maxEventStreams
            self.maxWaiters = maxWaiters
            self.stallTimeoutMilliseconds = stallTimeoutMilliseconds
            streamLimits = EventStreamState.Limits(keepAliveMilliseconds: keepAliveMilliseconds)
        }
    }

    let catalog: MediaCatalog
    let queue: any SerialQueue
    let clock: any Clock
    let settings: Settings
    /// The long-polls, woken with each batch.
    let waiters: ChangeWaiters
    let logger: Logger
    private var subscription: Broadcast<[CatalogEvent]>.Subscription?
    /// The newest id delivered: where a stream without `Last-Event-ID` starts.
    private(set) var latestID: Int64 = 0
    /// Open streams, weakly: a stream ends with its connection, whoever forgets to say so.
    private var streams: [ObjectIdentifier: WeakStream] = [:]
    /// Before this instant no stream's keep-alive is due; nil: no stream.
    private var nextKeepAliveCheck: MonotonicInstant?

    private struct WeakStream {
        weak var stream: EventStream?
    }

    public init(
        catalog: MediaCatalog, queue: any SerialQueue, settings: Settings = Settings(),
        clock: any Clock = SystemClock(), logger: Logger
    ) {
        self.catalog = catalog
        self.queue = queue
        self.settings = settings
        self.clock = clock
        self.logger = logger
        waiters = ChangeWaiters(limit: settings.maxWaiters)
    }

    /// Subscribes to the catalog's feed. Call once, before serving.
    public func start() async {
        // Subscribed before the newest id is read, so nothing falls between the two.
        subscription = catalog.eventFeed.subscribe { [weak self] events in
            // On the catalog's thread, right after a commit: hand over and return.
            guard let hub = self else { return }
            hub.queue.execute { hub.deliver(events) }
        }
        let latest = await catalog.latestEventID()
        queue.execute { [self] in latestID = max(latestID, latest) }
    }

    /// Answers every long-poll now, and every later one without waiting: call when the daemon
    /// begins to stop, so waiting requests do not hold the shutdown for its whole grace period.
    public func endWaits() {
        waiters.close()
    }

    /// Ends the subscription; open streams see no more events.
    public func stop() {
        subscription?.cancel()
        subscription = nil
    }

    /// Open streams (on the loop thread).
    var streamCount: Int {
        assert(queue.isCurrent)
        return streams.count
    }

    /// A new stream after `cursor` (replayed from the history when `replay`), registered at once
    /// so that no batch falls between now and its start; throws when `maxEventStreams` are open.
    func openStream(after cursor: Int64?, types: Set<CatalogEventType>?) throws -> EventStream {
        assert(queue.isCurrent)
        if streams.count >= settings.maxEventStreams {
            // Streams whose connection went without stopping them first.
            streams = streams.filter { $0.value.stream != nil }
        }
        guard streams.count < settings.maxEventStreams else {
            throw ChangeFeedError.tooManyEventStreams(limit: settings.maxEventStreams)
        }
        let now = clock.monotonicNow()
        let state = EventStreamState(
            after: cursor ?? latestID, replay: cursor != nil, types: types, limits: settings.streamLimits,
            now: now)
        let stream = EventStream(
            hub: self, state: state, stallTimeoutMilliseconds: settings.stallTimeoutMilliseconds)
        streams[ObjectIdentifier(stream)] = WeakStream(stream: stream)
        let deadline = state.keepAliveDeadline
        nextKeepAliveCheck = min(nextKeepAliveCheck ?? deadline, deadline)
        return stream
    }

    func remove(_ stream: EventStream) {
        assert(queue.isCurrent)
        streams.removeValue(forKey: ObjectIdentifier(stream))
        if streams.isEmpty { nextKeepAliveCheck = nil }
    }

    /// A batch the catalog committed, on the loop thread.
    func deliver(_ events: [CatalogEvent]) {
        assert(queue.isCurrent)
        guard let last = events.last else { return }
        latestID = max(latestID, last.id)
        if !streams.isEmpty {
            // Framed once, shared by every stream.
            let framed = events.map(ServerSentEvent.init)
            for entry in streams.values { entry.stream?.deliver(framed) }
        }
        waiters.wake(events)
    }

    /// Wakes the streams whose keep-alive is due; the loop's tick calls it.
    public func tick() {
        assert(queue.isCurrent)
        let now = clock.monotonicNow()
        guard let check = nextKeepAliveCheck, now >= check else { return }
        var earliest: MonotonicInstant?
        for (key, entry) in streams {
            guard let stream = entry.stream else {
                streams.removeValue(forKey: key)
                continue
            }
            stream.keepAliveIfDue(now: now)
            let deadline = stream.keepAliveDeadline
            earliest = min(earliest ?? deadline, deadline)
        }
        guard let earliest else {
            nextKeepAliveCheck = nil
            return
        }
        // A stream still due (its socket is full) is looked at again a second later, not every tick.
        nextKeepAliveCheck = earliest > now ? earliest : now.advanced(by: 1_000_000_000)
    }

    /// Reads a page of history for `stream` on the catalog's thread and hands it back on the loop.
    func fetch(after cursor: Int64, types: Set<CatalogEventType>?, for stream: EventStream) {
        let limit = settings.streamLimits.pageSize
        // Held strongly until the page is back: a stream that stopped meanwhile ignores it.
        Task { [catalog, queue, logger] in
            do {
                let page = try await catalog.events(after: cursor, limit: limit, types: types)
                queue.execute { stream.pageArrived(page, complete: page.events.count < limit) }
            } catch {
                logger.warning("could not read the event history", ["error": "\(error)"])
                queue.execute { stream.pageFailed() }
            }
        }
    }
}

/// The change feed is at one of its limits.
public enum ChangeFeedError: Error, Equatable {
    /// `max_event_streams` streams are open.
    case tooManyEventStreams(limit: Int)
    /// `max_long_polls` requests are waiting.
    case tooManyWaiters(limit: Int)
}
