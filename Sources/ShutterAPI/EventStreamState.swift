import ShutterCatalog
import ShutterSystem

/// What one `/events` stream sends and when: a pure state machine, no I/O, no clock of its own.
///
/// A stream is either *live* (the hub hands it each committed batch) or *catching up* (it reads
/// the catalog's history a page at a time, whenever the client has taken everything queued).
/// It catches up when it opens with a `Last-Event-ID`, and again whenever live events pile up
/// past its limits because the client reads slowly: so memory per stream stays bounded and a slow
/// client still loses nothing, it reads the history instead of a queue. While catching up, live
/// events are kept (up to the same limits) so the switch back to live leaves no gap; every event
/// is queued at most once because ids only grow and anything at or below `queuedThrough` is
/// dropped. A cursor the history no longer covers gets one `reset`.
struct EventStreamState {
    /// How much one stream may hold.
    struct Limits: Sendable, Equatable {
        /// Events queued for the client, or kept from the live feed while catching up.
        var maxQueuedEvents = 256
        /// Their bytes.
        var maxQueuedBytes = 256 * 1024
        /// Events read from the catalog at a time while catching up.
        var pageSize = 128
        /// Silence after which a comment line is sent.
        var keepAliveMilliseconds = 15_000

        init(
            maxQueuedEvents: Int = 256, maxQueuedBytes: Int = 256 * 1024, pageSize: Int = 128,
            keepAliveMilliseconds: Int = 15_000
        ) {
            self.maxQueuedEvents = max(1, maxQueuedEvents)
            self.maxQueuedBytes = max(1, maxQueuedBytes)
            self.pageSize = max(1, pageSize)
            self.keepAliveMilliseconds = max(1, keepAliveMilliseconds)
        }
    }

    /// What the stream does next.
    enum Output: Equatable {
        /// Write these bytes.
        case chunks([[UInt8]])
        /// Read the catalog's events after this id (`pageSize` of them) and report them with
        /// `pageArrived`, or `pageFailed`.
        case fetch(after: Int64)
        /// Nothing until an event, a page, or the keep-alive is due.
        case waiting
    }

    private enum Phase: Equatable {
        case live
        /// Reading history; `fetching` while a page is being read.
        case catchingUp(fetching: Bool)
    }

    let types: Set<CatalogEventType>?
    let limits: Limits
    private var phase: Phase
    /// The newest id queued or skipped: nothing at or below it is queued again.
    private(set) var queuedThrough: Int64
    /// The newest id handed to the connection: where catching up starts after an overflow.
    private(set) var sentThrough: Int64
    private var queue: [[UInt8]] = []
    private var queuedBytes = 0
    /// Live events that arrived while catching up, oldest first.
    private var heldLive: [ServerSentEvent] = []
    private var heldBytes = 0
    /// Live events were dropped while catching up: read the history once more before going live.
    private var heldOverflowed = false
    private var preambleSent = false
    private var lastOutputAt: MonotonicInstant
    /// Times the stream fell behind its limits and went back to the history.
    private(set) var overflows = 0

    /// A stream that starts after `cursor`: from the history when `replay` (a `Last-Event-ID`),
    /// else live (the cursor is the newest id the hub has seen).
    init(
        after cursor: Int64, replay: Bool, types: Set<CatalogEventType>?, limits: Limits,
        now: MonotonicInstant
    ) {
        self.types = types
        self.limits = limits
        phase = replay ? .catchingUp(fetching: false) : .live
        queuedThrough = cursor
        sentThrough = cursor
        lastOutputAt = now
    }

    /// Whether this stream is reading the history rather than the live feed.
    var isCatchingUp: Bool { phase != .live }

    /// Takes a batch the hub just received; true when the stream has new output to be woken for.
    mutating func eventsArrived(_ events: [ServerSentEvent]) -> Bool {
        let wanted = events.filter { event in
            event.id > queuedThrough && (types == nil || event.type.map { types!.contains($0) } ?? true)
        }
        guard !wanted.isEmpty else { return false }
        switch phase {
        case .live:
            for event in wanted { enqueue(event) }
            if queue.count > limits.maxQueuedEvents || queuedBytes > limits.maxQueuedBytes {
                // The client reads slower than events come: forget the queue, read the history
                // from what the client already has once it drains.
                overflows += 1
                queue.removeAll()
                queuedBytes = 0
                queuedThrough = sentThrough
                phase = .catchingUp(fetching: false)
                // Woken so that a connection waiting for output starts reading the history now.
                return true
            }
            return true
        case .catchingUp:
            guard !heldOverflowed else { return false }
            for event in wanted where event.id > (heldLive.last?.id ?? 0) {
                heldLive.append(event)
                heldBytes += event.bytes.count
            }
            if heldLive.count > limits.maxQueuedEvents || heldBytes > limits.maxQueuedBytes {
                heldLive.removeAll()
                heldBytes = 0
                heldOverflowed = true
            }
            return false
        }
    }

    /// A page of the history after the cursor `fetch` asked for.
    ///
    /// `complete` is false when the page is full, so more may follow. Returns whether there is
    /// output to be woken for.
    mutating func pageArrived(_ page: CatalogEventPage, complete: Bool) -> Bool {
        guard case .catchingUp = phase else { return false }
        phase = .catchingUp(fetching: false)
        if page.missedSome {
            // Events after the cursor are gone: tell the client to list again, then go on from
            // the newest id the history had.
            enqueue(.reset(latestID: page.latestID))
            queuedThrough = max(queuedThrough, page.latestID)
        } else {
            for event in page.events where event.id > queuedThrough {
                if let types, !types.contains(event.type) { continue }
                enqueue(ServerSentEvent(event))
            }
            // A full page: the next pull reads the next one.
            if !complete { return true }
        }
        if heldOverflowed {
            // Live events were dropped meanwhile; they are in the history: read it once more.
            heldOverflowed = false
            return !queue.isEmpty
        }
        for event in heldLive where event.id > queuedThrough { enqueue(event) }
        heldLive.removeAll()
        heldBytes = 0
        phase = .live
        return !queue.isEmpty
    }

    /// Reading a page failed: the next `nextOutput` asks again.
    mutating func pageFailed() {
        if case .catchingUp = phase { phase = .catchingUp(fetching: false) }
    }

    /// Whether a keep-alive comment is due at `now` (the hub's tick wakes the stream for it).
    func keepAliveDue(now: MonotonicInstant) -> Bool {
        queue.isEmpty
            && now.nanoseconds(since: lastOutputAt) >= UInt64(limits.keepAliveMilliseconds) * 1_000_000
    }

    /// When the keep-alive falls due if nothing is sent before.
    var keepAliveDeadline: MonotonicInstant {
        lastOutputAt.advanced(by: UInt64(limits.keepAliveMilliseconds) * 1_000_000)
    }

    /// What to do when the connection has written everything before.
    mutating func nextOutput(now: MonotonicInstant) -> Output {
        var chunks: [[UInt8]] = []
        if !preambleSent {
            preambleSent = true
            chunks.append(ServerSentEvent.preamble)
        }
        if !queue.isEmpty {
            chunks += queue
            queue.removeAll()
            queuedBytes = 0
            sentThrough = queuedThrough
        } else if phase == .catchingUp(fetching: false) && chunks.isEmpty {
            phase = .catchingUp(fetching: true)
            return .fetch(after: queuedThrough)
        } else if chunks.isEmpty && keepAliveDue(now: now) {
            chunks.append(ServerSentEvent.keepAlive)
        }
        if chunks.isEmpty { return .waiting }
        lastOutputAt = now
        return .chunks(chunks)
    }

    private mutating func enqueue(_ event: ServerSentEvent) {
        queue.append(event.bytes)
        queuedBytes += event.bytes.count
        queuedThrough = max(queuedThrough, event.id)
    }
}
