import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// One `/events` response: the body its connection pulls server-sent events from.
///
/// What to send and when is `EventStreamState`'s decision; this carries it out on the loop
/// thread: wakes the connection, asks the hub for a page of history.
final class EventStream: HTTPBodyStream, @unchecked Sendable {
    // @unchecked Sendable: made by the handler on the loop thread and used only there.

    /// A few events of backlog in the kernel at most: a client that stops reading is seen as
    /// stalled soon, instead of after megabytes of send buffer (`tcp_wmem`) fill up.
    static let unsentByteLimit = 16 * 1024

    private let hub: EventHub
    private var state: EventStreamState
    private var writer: HTTPStreamWriter?
    private var stopped = false
    let stallTimeoutMilliseconds: Int?

    init(hub: EventHub, state: EventStreamState, stallTimeoutMilliseconds: Int) {
        self.hub = hub
        self.state = state
        self.stallTimeoutMilliseconds = stallTimeoutMilliseconds
    }

    var unsentByteLimit: Int? { Self.unsentByteLimit }

    var keepAliveDeadline: MonotonicInstant { state.keepAliveDeadline }

    func start(_ writer: HTTPStreamWriter) {
        self.writer = writer
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        writer = nil
        hub.remove(self)
    }

    func nextOutput() -> HTTPStreamOutput {
        switch state.nextOutput(now: hub.clock.monotonicNow()) {
        case .chunks(let chunks): return .chunks(chunks)
        case .waiting: return .waiting
        case .fetch(let cursor):
            hub.fetch(after: cursor, types: state.types, for: self)
            return .waiting
        }
    }

    func deliver(_ events: [ServerSentEvent]) {
        let overflowsBefore = state.overflows
        if state.eventsArrived(events) { writer?.wake() }
        if state.overflows > overflowsBefore {
            // Once per episode: the stream reads the history until it is live again.
            hub.logger.info(
                "event stream fell behind; reading the history",
                ["after": String(state.sentThrough), "overflows": String(state.overflows)])
        }
    }

    func pageArrived(_ page: CatalogEventPage, complete: Bool) {
        guard !stopped else { return }
        if state.pageArrived(page, complete: complete) { writer?.wake() }
    }

    func pageFailed() {
        guard !stopped else { return }
        state.pageFailed()
        // Asked again at the next keep-alive, not in a tight loop against a failing catalog.
    }

    func keepAliveIfDue(now: MonotonicInstant) {
        if state.keepAliveDue(now: now) { writer?.wake() }
    }
}
