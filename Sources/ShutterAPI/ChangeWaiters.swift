import ShutterCatalog
import ShutterSystem

/// The long-polls (`GET /library?after=…&wait=…`, `GET /jobs/{id}?wait=…`) waiting for a change,
/// woken by the event hub when a batch holds an event of a type they care about.
///
/// A waiter registers *before* it looks at the catalog and waits only if it found nothing, so a
/// change committed between the look and the wait still wakes it (the event is published after
/// the commit, and the waiter is already listed). Waiting costs no thread: a suspended task.
final class ChangeWaiters: Sendable {
    private struct Waiter {
        var types: Set<CatalogEventType>
        /// Narrows `types` to the events of one thing (one job), so a burst of other jobs'
        /// updates does not make every waiter look again.
        var filter: (@Sendable (CatalogEvent) -> Bool)?
        var signalled = false
        var cancelled = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 1
        /// The daemon is stopping: nobody waits any more.
        var closed = false
    }

    /// The most waiters at once.
    let limit: Int
    // Guards the waiters; continuations are resumed after it is released.
    private let state = LockedValue(State())

    init(limit: Int) {
        self.limit = limit
    }

    /// How many are waiting (or registered to).
    var count: Int { state.withLock { $0.waiters.count } }

    /// Registers a waiter for events of `types` (those `filter` accepts, when given); throws when
    /// `limit` are already registered.
    func register(
        for types: Set<CatalogEventType>, where filter: (@Sendable (CatalogEvent) -> Bool)? = nil
    ) throws(ChangeFeedError) -> ChangeTicket {
        let id = state.withLock { state -> UInt64? in
            guard state.waiters.count < limit else { return nil }
            defer { state.nextID += 1 }
            state.waiters[state.nextID] = Waiter(types: types, filter: filter)
            return state.nextID
        }
        guard let id else { throw .tooManyWaiters(limit: limit) }
        return ChangeTicket(id: id, waiters: self)
    }

    /// Wakes every waiter interested in one of `events`.
    func wake(_ events: [CatalogEvent]) {
        let types = Set(events.map(\.type))
        // Filters run outside the lock (it is never held across a call out): the interested
        // waiters are copied, chosen, then signalled.
        let interested = state.withLock { state in
            state.waiters.filter { !$0.value.signalled && !$0.value.types.isDisjoint(with: types) }
                .map { (id: $0.key, types: $0.value.types, filter: $0.value.filter) }
        }
        let chosen = Set(
            interested.filter { waiter in
                guard let filter = waiter.filter else { return true }
                return events.contains { waiter.types.contains($0.type) && filter($0) }
            }.map(\.id))
        guard !chosen.isEmpty else { return }
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var ready: [CheckedContinuation<Void, Never>] = []
            for id in chosen {
                guard let waiter = state.waiters[id], !waiter.signalled else { continue }
                state.waiters[id]?.signalled = true
                if let continuation = waiter.continuation {
                    ready.append(continuation)
                    state.waiters[id]?.continuation = nil
                }
            }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Ends every wait now and every later one at once (the daemon is stopping): each long-poll
    /// answers what it has, instead of holding the shutdown for its grace period.
    func close() {
        let continuations = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.closed = true
            let continuations = state.waiters.values.compactMap(\.continuation)
            for id in state.waiters.keys { state.waiters[id]?.continuation = nil }
            return continuations
        }
        for continuation in continuations { continuation.resume() }
    }

    var isClosed: Bool { state.withLock { $0.closed } }

    fileprivate func signalled(_ id: UInt64) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard let waiter = state.waiters[id], !waiter.signalled, !waiter.cancelled, !state.closed
                    else {
                        return true
                    }
                    state.waiters[id]?.continuation = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let continuation = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.waiters[id]?.cancelled = true
                defer { state.waiters[id]?.continuation = nil }
                return state.waiters[id]?.continuation
            }
            continuation?.resume()
        }
    }

    fileprivate func rearm(_ id: UInt64) {
        state.withLock { state in
            state.waiters[id]?.signalled = false
            state.waiters[id]?.cancelled = false
        }
    }

    fileprivate func isSignalled(_ id: UInt64) -> Bool {
        state.withLock { $0.waiters[id]?.signalled ?? false }
    }

    fileprivate func remove(_ id: UInt64) {
        let continuation = state.withLock { $0.waiters.removeValue(forKey: id)?.continuation }
        continuation?.resume()
    }
}

/// One registered waiter; `finish()` it when done (the owner's `defer`).
final class ChangeTicket: Sendable {
    private let id: UInt64
    private let waiters: ChangeWaiters

    fileprivate init(id: UInt64, waiters: ChangeWaiters) {
        self.id = id
        self.waiters = waiters
    }

    /// Waits until an event of the ticket's types has arrived since it was registered (or last
    /// re-armed), or until `deadline`; true when woken by an event, false at the deadline or when
    /// the waiters are closed.
    func wait(until deadline: MonotonicInstant, clock: any Clock) async -> Bool {
        if waiters.isClosed { return false }
        if waiters.isSignalled(id) { return true }
        return await withTaskGroup(of: Bool.self) { group in
            group.addTask { [waiters, id] in
                await waiters.signalled(id)
                return !Task.isCancelled
            }
            group.addTask {
                try? await clock.sleep(until: deadline)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return !waiters.isClosed && (first || waiters.isSignalled(id))
        }
    }

    /// Forgets what woke it: call before looking at the catalog again, so a change after the look
    /// still wakes the next `wait`.
    func rearm() { waiters.rearm(id) }

    /// Leaves the list of waiters.
    func finish() { waiters.remove(id) }
}
