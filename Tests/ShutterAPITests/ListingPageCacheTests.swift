import ShutterCatalog
import ShutterHTTP
import ShutterTestSupport
import Testing

@testable import ShutterAPI

@Suite struct ListingPageCacheTests {
    @Test func aPageIsServedOnlyAtTheGenerationItWasMadeAt() {
        let cache = ListingPageCache()
        #expect(cache.page(query: "?limit=5", generation: 1) == nil)
        cache.store([1, 2, 3], query: "?limit=5", generation: 1)
        #expect(cache.page(query: "?limit=5", generation: 1) == [1, 2, 3])
        #expect(cache.page(query: "?limit=5", generation: 2) == nil)
        #expect(cache.page(query: "?limit=6", generation: 1) == nil)
        #expect(cache.counts == .init(hits: 1, misses: 3, pages: 1, bytes: 11))
    }

    @Test func aPageMadeFromAnOlderReadNeverReplacesANewerOne() {
        let cache = ListingPageCache()
        cache.store([2], query: "", generation: 2)
        cache.store([1], query: "", generation: 1)
        #expect(cache.page(query: "", generation: 2) == [2])
    }

    @Test func aNewerGenerationDropsEveryOlderPage() {
        let cache = ListingPageCache()
        cache.store([1], query: "?a", generation: 1)
        cache.store([1], query: "?b", generation: 1)
        cache.store([2], query: "?c", generation: 2)
        #expect(cache.counts.pages == 1)
        #expect(cache.counts.bytes == 3)
    }

    @Test func pagesAndBytesAreBoundedOldestFirst() {
        let cache = ListingPageCache(maximumPages: 3, maximumBytes: 100)
        for index in 0..<5 { cache.store([UInt8(index)], query: "?\(index)", generation: 7) }
        #expect(cache.counts.pages == 3)
        #expect(cache.page(query: "?1", generation: 7) == nil)
        #expect(cache.page(query: "?2", generation: 7) == [2])
        cache.store(Array(repeating: 9, count: 90), query: "?big", generation: 7)
        #expect(cache.counts.bytes <= 100)
        #expect(cache.page(query: "?big", generation: 7)?.count == 90)
        // A page bigger than the whole cache is not kept, and evicts nothing.
        cache.store(Array(repeating: 9, count: 200), query: "?huge", generation: 7)
        #expect(cache.page(query: "?huge", generation: 7) == nil)
        #expect(cache.page(query: "?big", generation: 7)?.count == 90)
    }

    /// Through the router: a listing answered once is answered again on the event loop with the
    /// same bytes, until the catalog changes; then the next answer has the new picture.
    @Test func aRepeatedListingIsAnsweredOnTheLoopUntilTheCatalogChanges() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            try await api.catalog.add(
                jpeg: [0xFF, 0xD8, 1, 0xFF, 0xD9], takenAt: 1, width: 8, height: 8, source: "test")
            let target = "/library?limit=2"
            #expect(try onTheLoop(api, target) == nil)
            let first = await api.respond(.get, target)
            #expect(first.status == .ok)
            let again = try #require(try onTheLoop(api, target))
            #expect(again.status == .ok)
            #expect(again.text == first.text)
            #expect(again.headers["ETag"] == first.headers["ETag"])
            #expect(again.headers["Content-Type"] == "application/json")
            // Another spelling is another entry; a long-poll always goes to its task.
            #expect(try onTheLoop(api, "/library?limit=2&before=9") == nil)
            #expect(try onTheLoop(api, "/library?after=0&wait=5") == nil)
            try await api.catalog.add(
                jpeg: [0xFF, 0xD8, 2, 0xFF, 0xD9], takenAt: 2, width: 8, height: 8, source: "test")
            #expect(try onTheLoop(api, target) == nil)
            let changed = await api.respond(.get, target)
            #expect(changed.text.contains(#""id":2"#))
            #expect(changed.headers["ETag"] != first.headers["ETag"])
            #expect(try onTheLoop(api, target)?.text == changed.text)
            // A bad query is still a 400 on the loop.
            #expect(throws: HTTPError.self) { try onTheLoop(api, "/library?limit=0") }
        }
    }

    private func onTheLoop(_ api: TestAPI, _ target: String) throws -> HTTPResponse? {
        let request = HTTPRequest(method: .get, target: target)
        guard
            case .handler(.immediateOrDeferred(let immediate, _), let parameters, _, _) = api.router.resolve(
                method: .get, path: request.path ?? "")
        else {
            Issue.record("GET /library is not answered on the loop first")
            return nil
        }
        return try immediate(request, parameters)
    }
}
