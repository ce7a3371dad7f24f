import ShutterCatalog

/// A destination that events leave the host for: an MQTT broker, a webhook, object storage.
///
/// The dispatcher calls `deliver` for one event at a time, in id order, and moves the sink's
/// cursor only once it returns; a throw is retried with backoff, so delivery is at least once and
/// the event id (in every message) lets the receiver drop a duplicate.
public protocol OutboxSink: AnyObject, Sendable {
    /// Stable across restarts: the key of the sink's cursor in the catalog (`mqtt`, `s3`, …).
    var name: String { get }
    /// The event types it delivers; the others pass without a call.
    var eventTypes: Set<CatalogEventType> { get }
    /// Whether the destination answered last time it was asked (for `/status`).
    var isConnected: Bool { get }
    /// Returns once the destination has acknowledged `event`; throws to have it retried.
    ///
    /// Must never block a thread of the cooperative pool on the network: a sink waits on its own
    /// thread or event loop and resumes the caller from there.
    func deliver(_ event: CatalogEvent) async throws
}

/// An error a sink throws after it had already waited for its destination to come back (the MQTT
/// client waits for its own reconnect, which has a backoff of its own, before it gives up).
///
/// The dispatcher then retries after its first, shortest delay, not a growing one: after such a
/// wait a growing backoff paces nothing, it only holds the backlog for up to five minutes after
/// the destination is back, the sink connected all along.
public protocol OutboxDestinationWaitError: Error {
    /// Whether this failure came after such a wait (otherwise the usual backoff applies).
    var waitedForDestination: Bool { get }
}

/// What `/status` shows of one sink.
public struct OutboxSinkStatus: Sendable, Equatable {
    public var name: String
    public var connected: Bool
    /// The id of the last event delivered (or passed over as not wanted).
    public var cursor: Int64
    /// Events recorded since the cursor, whether the sink wants them or not.
    public var lag: Int64
    public var delivered: UInt64
    /// Failed attempts, each retried.
    public var failures: UInt64
    /// Events the history pruned before the sink could deliver them.
    public var dropped: UInt64
    public var lastError: String?

    public init(
        name: String, connected: Bool = false, cursor: Int64 = 0, lag: Int64 = 0, delivered: UInt64 = 0,
        failures: UInt64 = 0, dropped: UInt64 = 0, lastError: String? = nil
    ) {
        self.name = name
        self.connected = connected
        self.cursor = cursor
        self.lag = lag
        self.delivered = delivered
        self.failures = failures
        self.dropped = dropped
        self.lastError = lastError
    }
}
