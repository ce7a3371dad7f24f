import ShutterHTTP
import ShutterSystem

/// Holds `POST /snap` to `max_pending_snaps` requests in progress at once (waiting for a frame or
/// for storage), and one client address to a quarter of them; more are answered `503` with
/// `Retry-After`.
///
/// A snap holds its picture's bytes (the frame with its EXIF block, about 200 KB at 1280x720)
/// until the catalog has stored it, and the catalog stores one picture at a time, each with its
/// fsyncs. The pipelining limit bounds the snaps of one connection, not those of all of them: 20
/// connections pipelining snaps they never read took RSS from 27 to 83 MB, and a hundred would
/// have taken hundreds. The share per address (as `max_connections_per_peer` is for connections)
/// keeps one such client from taking every place: an honest client elsewhere, which snaps one at
/// a time, still gets one.
///
/// Ownership: shared by every snap handler on any thread; the counts are under one lock.
public final class SnapAdmission: Sendable {
    /// Refused because `limit` snaps are in progress, or `limit` from the same client address.
    public struct LimitReached: Error, Equatable {
        public let limit: Int
        /// The limit reached was the client address's share.
        public let perClient: Bool
    }

    /// The most snaps in progress at once.
    public let limit: Int
    /// The most snaps in progress at once from one client address: a quarter of `limit`.
    public let perClientLimit: Int
    // Held only to count (never across a wait); requests without a peer (tests, in-process) count
    // in the total alone.
    private let counts = LockedValue<(total: Int, byPeer: [PeerAddress: Int])>((0, [:]))

    /// At most `limit` snaps at once (at least one), a quarter of them (at least one) per address.
    public init(limit: Int) {
        self.limit = max(1, limit)
        perClientLimit = max(1, limit / 4)
    }

    /// Snaps in progress now.
    public var count: Int { counts.withLock { $0.total } }

    /// Runs `snap` if fewer than `limit` snaps are in progress, and fewer than `perClientLimit`
    /// from `peer`; else throws `LimitReached`.
    func admit<T>(from peer: PeerAddress?, _ snap: () async throws -> T) async throws -> T {
        try counts.withLock { counts in
            guard counts.total < limit else { throw LimitReached(limit: limit, perClient: false) }
            if let peer {
                let mine = counts.byPeer[peer, default: 0]
                guard mine < perClientLimit else {
                    throw LimitReached(limit: perClientLimit, perClient: true)
                }
                counts.byPeer[peer] = mine + 1
            }
            counts.total += 1
        }
        defer {
            counts.withLock { counts in
                counts.total -= 1
                if let peer {
                    let mine = counts.byPeer[peer, default: 1] - 1
                    counts.byPeer[peer] = mine > 0 ? mine : nil
                }
            }
        }
        return try await snap()
    }
}
