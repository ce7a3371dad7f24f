/// Hands each published value to every subscriber, from the publisher's thread.
///
/// Subscribers must return at once (wake a thread, resume a continuation, queue work on an event
/// loop): the catalog publishes from its own thread, right after a commit, and a slow subscriber
/// would stall every write. Thread-safe; subscribing during a publish is allowed.
public final class Broadcast<Value: Sendable>: Sendable {
    public typealias Handler = @Sendable (Value) -> Void

    /// Ends a subscription when cancelled (or when nobody holds it any more).
    public final class Subscription: Sendable {
        private let cancelAction: @Sendable () -> Void
        init(_ cancel: @escaping @Sendable () -> Void) { cancelAction = cancel }
        public func cancel() { cancelAction() }
        deinit { cancelAction() }
    }

    private let state = LockedValue((nextID: 0, handlers: [Int: Handler]()))

    public init() {}

    /// Calls `handler` with every value published from now on, until the subscription ends.
    public func subscribe(_ handler: @escaping Handler) -> Subscription {
        let id = state.withLock { state -> Int in
            state.nextID += 1
            state.handlers[state.nextID] = handler
            return state.nextID
        }
        return Subscription { [weak self] in
            _ = self?.state.withLock { $0.handlers.removeValue(forKey: id) }
        }
    }

    /// Gives `value` to every subscriber, outside the lock.
    public func publish(_ value: Value) {
        let handlers = state.withLock { Array($0.handlers.values) }
        for handler in handlers { handler(value) }
    }

    /// How many subscribers there are.
    public var subscriberCount: Int { state.withLock { $0.handlers.count } }
}
