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
        var signalled = false
        var cancelled = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 1
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

    /// Registers a waiter for events of `types`; throws when `limit` are already registered.
    func register(for types: Set<CatalogEventType>) throws(ChangeFeedError) -> ChangeTicket {
        let id = state.withLock { state -> UInt64? in
            guard state.waiters.count < limit else { return nil }
            defer { state.nextID += 1 }
            state.waiters[state.nextID] = Waiter(types: types)
            return state.nextID
        }
        guard let id else { throw .tooManyWaiters(limit: limit) }
        return ChangeTicket(id: id, waiters: self)
    }

    /// Wakes every waiter interested in one of `types`.
    func wake(_ types: Set<CatalogEventType>) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var ready: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in state.waiters where !waiter.signalled && !waiter.types.isDisjoint(with: types)
            {
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

    fileprivate func signalled(_ id: UInt64) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = state.withLock { state -> Bool in
                    guard let waiter = state.waiters[id], !waiter.signalled, !waiter.cancelled else {
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
    /// re-armed), or until `deadline`; true when woken by an event.
    func wait(until deadline: MonotonicInstant, clock: any Clock) async -> Bool {
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
            return first || waiters.isSignalled(id)
        }
    }

    /// Forgets what woke it: call before looking at the catalog again, so a change after the look
    /// still wakes the next `wait`.
    func rearm() { waiters.rearm(id) }

    /// Leaves the list of waiters.
    func finish() { waiters.remove(id) }
}
