import ShutterCatalog
import ShutterOutbox
import ShutterSystem

/// An outbox sink that records what it is given, and fails while told to.
public final class RecordingOutboxSink: OutboxSink {
    public struct Failure: OutboxDestinationWaitError, CustomStringConvertible {
        public var waitedForDestination: Bool
        public var description: String { "the destination is down" }
    }

    public let name: String
    public let eventTypes: Set<CatalogEventType>
    private let state = LockedValue(
        (delivered: [CatalogEvent](), attempts: 0, failNext: 0, down: false, waitsForDestination: false))
    private let deliveries = Broadcast<Int>()

    public init(name: String = "test", eventTypes: Set<CatalogEventType> = Set(CatalogEventType.allCases)) {
        self.name = name
        self.eventTypes = eventTypes
    }

    public var isConnected: Bool { state.withLock { !$0.down && $0.failNext == 0 } }

    /// Every event acknowledged, in order.
    public var delivered: [CatalogEvent] { state.withLock { $0.delivered } }
    /// Every call of `deliver`, failed ones included.
    public var attempts: Int { state.withLock { $0.attempts } }

    /// The next `count` deliveries fail.
    public func failNext(_ count: Int) { state.withLock { $0.failNext = count } }

    /// While down, every delivery fails; `waitingForDestination`: as a sink that waited for its
    /// destination before failing (an MQTT client waiting for its reconnect) fails.
    public func setDown(_ down: Bool, waitingForDestination: Bool = false) {
        state.withLock {
            $0.down = down
            $0.waitsForDestination = waitingForDestination
        }
    }

    public func deliver(_ event: CatalogEvent) async throws {
        let failure = state.withLock { state -> Failure? in
            state.attempts += 1
            if state.down { return Failure(waitedForDestination: state.waitsForDestination) }
            if state.failNext > 0 {
                state.failNext -= 1
                return Failure(waitedForDestination: false)
            }
            state.delivered.append(event)
            return nil
        }
        deliveries.publish(0)
        if let failure { throw failure }
    }

    /// Returns once `condition` holds, checking after each attempt (no sleeping).
    public func waitUntil(_ condition: @escaping @Sendable (RecordingOutboxSink) -> Bool) async {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let subscription = deliveries.subscribe { _ in continuation.yield() }
        defer { subscription.cancel() }
        var iterator = stream.makeAsyncIterator()
        while !condition(self) {
            _ = await iterator.next()
        }
    }
}
