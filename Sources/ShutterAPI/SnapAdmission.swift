import ShutterHTTP
import Synchronization

/// Holds `POST /snap` to `max_pending_snaps` requests in progress at once (waiting for a frame or
/// for storage); more are answered `503` with `Retry-After`.
///
/// A snap holds its picture's bytes (the frame with its EXIF block, about 200 KB at 1280x720)
/// until the catalog has stored it, and the catalog stores one picture at a time, each with its
/// fsyncs. The pipelining limit bounds the snaps of one connection, not those of all of them: 20
/// connections pipelining snaps they never read took RSS from 27 to 83 MB, and a hundred would
/// have taken hundreds. An honest client snaps one at a time and never meets this limit.
///
/// Ownership: shared by every snap handler on any thread; the count is one atomic.
public final class SnapAdmission: Sendable {
    /// Refused because `limit` snaps are in progress.
    public struct LimitReached: Error, Equatable {
        public let limit: Int
    }

    /// The most snaps in progress at once.
    public let limit: Int
    // Taken with a compare-and-exchange below the limit, given back when the snap has answered;
    // relaxed is enough: it orders nothing but itself.
    private let inProgress = Atomic<Int>(0)

    /// At most `limit` snaps at once (at least one).
    public init(limit: Int) {
        self.limit = max(1, limit)
    }

    /// Snaps in progress now.
    public var count: Int { inProgress.load(ordering: .relaxed) }

    /// Runs `snap` if fewer than `limit` snaps are in progress, else throws `LimitReached`.
    func admit<T>(_ snap: () async throws -> T) async throws -> T {
        var current = inProgress.load(ordering: .relaxed)
        while true {
            guard current < limit else { throw LimitReached(limit: limit) }
            let (exchanged, original) = inProgress.compareExchange(
                expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { break }
            current = original
        }
        defer { inProgress.subtract(1, ordering: .relaxed) }
        return try await snap()
    }
}
