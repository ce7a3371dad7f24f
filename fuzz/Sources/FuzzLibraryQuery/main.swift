// Fuzzes the query parser (QueryParameters) through GET /library's parameters (LibraryQuery):
// percent-decoding, repeated and unknown names, numbers, booleans, RFC 3339 times.
//
// An input is the query of a /library target. It parses or is refused with a 400; a query that
// parses is within its bounds, and the link to its next page parses to the same filters.
import FuzzSupport
import ShutterHTTP

@testable import ShutterAPI

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    let request = HTTPRequest(method: .get, target: "/library?" + String(decoding: bytes, as: UTF8.self))
    let query: LibraryQuery
    do {
        query = try LibraryQuery(request)
    } catch let error as HTTPError {
        invariant(error.status == .badRequest, "refused with \(error.status)")
        return 0
    } catch {
        invariant(false, "refused with \(error), not an HTTPError")
        return 0
    }
    invariant((1...LibraryRoutes.maximumPageSize).contains(query.limit), "limit \(query.limit)")
    if let label = query.label {
        invariant(!label.isEmpty && label.utf8.count <= SnapOptions.maximumLabelBytes, "label \(label)")
    }
    if let since = query.since, let until = query.until {
        invariant(since < until, "since \(since) until \(until)")
    }

    let lastID: Int64 = 41
    let link = query.next(after: lastID)
    guard let next = try? LibraryQuery(HTTPRequest(method: .get, target: link)) else {
        invariant(false, "the next page's link \(link) does not parse")
        return 0
    }
    invariant(
        next.job == query.job && next.label == query.label && next.keep == query.keep
            && next.since == query.since && next.until == query.until && next.limit == query.limit,
        "the next page's link \(link) changes the filters of \(query) to \(next)")
    return 0
}

runLibFuzzer(testOneInput)
