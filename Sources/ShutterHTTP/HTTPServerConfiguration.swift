/// Limits and timeouts of the HTTP server; every field is a config key (see README).
public struct HTTPServerConfiguration: Sendable, Equatable {
    /// Address to listen on; loopback unless told otherwise (secure by default).
    public var host: String = "127.0.0.1"
    /// TCP port; 0 picks a free one (tests).
    public var port: Int = 8080
    /// Every address to listen on; empty means `host`:`port` alone.
    public var listeners: [ListenAddress] = []
    /// Request size limits enforced by the parser.
    public var limits = HTTPParserLimits()
    /// Open connections beyond this are answered 503 and closed.
    public var maxConnections: Int = 1024
    /// Open connections from one client address beyond this are answered 503 and closed; 0
    /// means a quarter of `maxConnections`, so one client cannot take every slot.
    public var maxConnectionsPerPeer: Int = 0
    /// Milliseconds from accepting a connection until its first request head must be complete:
    /// a connection that sent nothing is closed silently, one that sent part of a head gets 408.
    public var headerTimeoutMilliseconds: Int = 10_000
    /// Milliseconds from a request's first byte until it must be complete (408 after).
    public var requestTimeoutMilliseconds: Int = 10_000
    /// Milliseconds a keep-alive connection may sit with nothing to do before it is closed.
    public var idleTimeoutMilliseconds: Int = 60_000
    /// Milliseconds a client may leave a response unread (no write progress) before it is dropped.
    public var writeTimeoutMilliseconds: Int = 30_000
    /// Requests read ahead on one connection before its responses must be written (pipelining).
    public var maxPipelinedRequests: Int = 16
    /// Milliseconds that shutdown waits for in-flight responses before closing everything.
    public var shutdownGraceMilliseconds: Int = 10_000
    /// Log one line per request (method, target, status, bytes, duration).
    public var logRequests: Bool = true
    /// Count requests by route and status class, with their latency (`HTTPServer.metrics`).
    public var collectMetrics: Bool = false
    /// The `Server` header.
    public var serverName: String = "shutterd"

    public init() {}

    /// `maxConnectionsPerPeer`, or a quarter of `maxConnections` (at least 1) when it is 0.
    public var effectiveMaxConnectionsPerPeer: Int {
        maxConnectionsPerPeer > 0 ? maxConnectionsPerPeer : max(1, maxConnections / 4)
    }
}
