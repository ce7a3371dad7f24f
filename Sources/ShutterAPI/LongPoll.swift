import ShutterCatalog
import ShutterHTTP
import ShutterSystem

/// `wait=S` on a read: the answer comes as soon as there is something to answer (a newer
/// picture, a job's new state), woken by the event hub, or after S seconds with what there is.
struct LongPoll: Sendable {
    /// The longest `wait` a request may ask for, in seconds.
    static let maximumWaitSeconds: Int64 = 300

    let waiters: ChangeWaiters
    let clock: any Clock

    /// Looks with `look` until `isReady` says its result is worth answering, each time an event of
    /// `types` (that `filter` accepts, when given) arrives, for at most `seconds`; returns the last
    /// look.
    ///
    /// The first look answers at once when it is ready, and costs no waiter slot when `seconds`
    /// is 0 or nil.
    func answer<Result: Sendable>(
        waitingUpTo seconds: Int64?, for types: Set<CatalogEventType>,
        where filter: (@Sendable (CatalogEvent) -> Bool)? = nil,
        look: () async throws -> Result, isReady: (Result) -> Bool
    ) async throws -> Result {
        guard let seconds, seconds > 0 else { return try await look() }
        let deadline = clock.monotonicNow().advanced(by: UInt64(seconds) * 1_000_000_000)
        // Registered before the first look: a change committed after the look still wakes it.
        let ticket = try waiters.register(for: types, where: filter)
        defer { ticket.finish() }
        while true {
            let result = try await look()
            if isReady(result) { return result }
            guard await ticket.wait(until: deadline, clock: clock) else { return result }
            ticket.rearm()
        }
    }
}
