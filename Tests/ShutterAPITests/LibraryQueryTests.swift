import ShutterHTTP
import Testing

@testable import ShutterAPI

/// `GET /library`'s parameters: every one bounded, a bad one refused naming it, and the `next`
/// link carrying every filter.
@Suite struct LibraryQueryTests {
    static let ten: Int64 = 1_796_205_600_000

    private func parse(_ query: String) throws -> LibraryQuery {
        try LibraryQuery(HTTPRequest(method: .get, target: "/library?" + query))
    }

    @Test func readsEveryFilter() throws {
        let query = try parse(
            "since=2026-12-02T10:00:00Z&until=2026-12-02T11:00:00.5%2B01:00&keep=true&job=3&label=a%20b&before=9&limit=7"
        )
        #expect(
            query
                == LibraryQuery(
                    limit: 7, before: 9, after: 0, job: 3, label: "a b", keep: true, since: Self.ten,
                    until: Self.ten + 500))
        #expect(try parse("keep=false").keep == false)
        #expect(try parse("") == LibraryQuery())
    }

    /// An unencoded `+` in an offset arrives as a space; it still means `+`.
    @Test func anUnencodedPlusInAnOffsetStillMeansPlus() throws {
        #expect(try parse("since=2026-12-02T11:00:00+01:00").since == Self.ten)
    }

    @Test(arguments: [
        ("since=yesterday", "since"), ("until=2026-12-02", "until"), ("since=2026-12-02T10:00:00", "since"),
        ("until=1796205600000", "until"), ("keep=yes", "keep"), ("keep=1", "keep"), ("keep=", "keep"),
        ("keep=TRUE", "keep"), ("since=2026-12-02T10:00:00Z&until=2026-12-02T10:00:00Z", "since"),
        ("since=2026-12-02T11:00:00Z&until=2026-12-02T10:00:00Z", "until"), ("since=a&since=b", "since"),
        ("limit=0", "limit"), ("limit=501", "limit"), ("before=0", "before"), ("after=-1", "after"),
        ("job=x", "job"), ("label=", "label"), ("label=" + String(repeating: "a", count: 201), "label"),
        ("offset=5", "offset"), ("since=" + String(repeating: "9", count: 5000), "since"),
    ])
    func refusesABadValueNamingIt(_ query: String, _ name: String) {
        do {
            _ = try parse(query)
            Issue.record("accepted \(query)")
        } catch let error as HTTPError {
            #expect(error.status == .badRequest)
            #expect(error.detail.contains(name), "\(error.detail)")
            #expect(error.detail.count < 400, "the detail echoes too much: \(error.detail.count)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    /// The `next` link keeps every filter and moves only the cursor; read back, it is the same query.
    @Test func nextLinkCarriesEveryFilter() throws {
        let backward = try parse(
            "since=2026-12-02T10:00:00.0001Z&until=2026-12-02T12:00:00%2B01:00&keep=false&label=%26x&limit=2")
        let link = backward.next(after: 41)
        #expect(
            link
                == "/library?before=41&label=%26x&keep=false&since=2026-12-02T10:00:00.001Z&until=2026-12-02T11:00:00.000Z&limit=2"
        )
        var expected = backward
        expected.before = 41
        #expect(try LibraryQuery(HTTPRequest(method: .get, target: link)) == expected)

        let forward = try parse("after=3&before=90&keep=true&since=2026-12-02T10:00:00Z")
        #expect(
            forward.next(after: 8)
                == "/library?after=8&before=90&keep=true&since=2026-12-02T10:00:00.000Z&limit=50")
    }
}
