import ShutterSystem

/// Rendered `GET /library` pages, by query, for as long as the catalog has not changed.
///
/// Scripts and pages poll the same few listings; a page of 50 records takes the catalog's thread
/// a fraction of a millisecond but writing it as JSON several times that, so a repeated query
/// is answered from here, on the event loop, with no task and no hop to the catalog. A page is
/// stored with the catalog's change counter read *before* its rows were, so a change that lands
/// while it is being made leaves it already stale: it is never served for a later state.
///
/// Bounded by page count and bytes (query keys included); pages of an older counter are dropped
/// first, since they can never be served again, then the oldest stored.
///
/// Ownership: one per router, shared by the loop (reads) and the listing tasks (stores) under
/// its lock.
final class ListingPageCache: Sendable {
    struct Page: Sendable {
        let generation: UInt64
        let body: [UInt8]
    }

    /// The statistics tests and `/status` read.
    struct Counts: Sendable, Equatable {
        var hits = 0
        var misses = 0
        var pages = 0
        var bytes = 0
    }

    private struct State: Sendable {
        var pages: [String: Page] = [:]
        /// Keys in the order stored, for dropping the oldest.
        var order: [String] = []
        var counts = Counts()
    }

    let maximumPages: Int
    let maximumBytes: Int
    private let state = LockedValue(State())

    /// 64 pages and 8 MiB: a few dozen pollers' listings, or sixty pages of 500 records.
    init(maximumPages: Int = 64, maximumBytes: Int = 8 << 20) {
        self.maximumPages = maximumPages
        self.maximumBytes = maximumBytes
    }

    var counts: Counts { state.withLock { $0.counts } }

    /// The page stored for `query` at `generation`, or nil.
    func page(query: String, generation: UInt64) -> [UInt8]? {
        state.withLock { state in
            guard let page = state.pages[query], page.generation == generation else {
                state.counts.misses += 1
                return nil
            }
            state.counts.hits += 1
            return page.body
        }
    }

    /// Keeps `body` as the page for `query` at `generation`, unless it is too big to keep.
    func store(_ body: [UInt8], query: String, generation: UInt64) {
        let size = Self.size(query: query, bytes: body.count)
        guard size <= maximumBytes else { return }
        state.withLock { state in
            if let old = state.pages[query] {
                // A page made from an older read must not replace a newer one.
                guard old.generation <= generation else { return }
                remove(query, from: &state)
            }
            if state.pages.values.contains(where: { $0.generation < generation }) {
                for key in state.order where (state.pages[key]?.generation ?? generation) < generation {
                    remove(key, from: &state)
                }
            }
            while !state.order.isEmpty
                && (state.counts.pages >= maximumPages || state.counts.bytes + size > maximumBytes)
            {
                remove(state.order[0], from: &state)
            }
            state.pages[query] = Page(generation: generation, body: body)
            state.order.append(query)
            state.counts.pages += 1
            state.counts.bytes += size
        }
    }

    private func remove(_ key: String, from state: inout State) {
        guard let page = state.pages.removeValue(forKey: key) else { return }
        state.order.removeAll { $0 == key }
        state.counts.pages -= 1
        state.counts.bytes -= Self.size(query: key, bytes: page.body.count)
    }

    private static func size(query: String, bytes: Int) -> Int { query.utf8.count + bytes }
}
