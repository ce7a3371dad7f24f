import FoundationEssentials
import ShutterHTTP
import ShutterTestSupport
import Testing

@testable import ShutterAPI

/// The paths, methods and scopes of `Resources/openapi.json`, as far as this test reads it.
private struct OpenAPIOperations: Decodable {
    struct Operation: Decodable, Equatable {
        let operationId: String
        let scope: String
        let responses: [String: Ignored]

        enum CodingKeys: String, CodingKey {
            case operationId
            case scope = "x-scope"
            case responses
        }

        static func == (lhs: Self, rhs: Self) -> Bool {
            lhs.operationId == rhs.operationId && lhs.scope == rhs.scope
                && Set(lhs.responses.keys) == Set(rhs.responses.keys)
        }
    }

    /// Any JSON value, skipped.
    struct Ignored: Decodable {
        init(from decoder: any Decoder) throws {}
    }

    /// A path item: its operations by upper-case method; `parameters` and the like are skipped.
    struct PathItem: Decodable {
        var operations: [String: Operation] = [:]

        struct Key: CodingKey {
            var stringValue: String
            var intValue: Int? { nil }
            init(stringValue: String) { self.stringValue = stringValue }
            init?(intValue: Int) { nil }
        }

        static let methods: Set<String> = [
            "get", "put", "post", "delete", "options", "head", "patch", "trace",
        ]

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: Key.self)
            for key in container.allKeys where Self.methods.contains(key.stringValue) {
                operations[key.stringValue.uppercased()] = try container.decode(Operation.self, forKey: key)
            }
        }
    }

    let openapi: String
    let paths: [String: PathItem]

    /// Every operation as `METHOD /path`, the router's spelling of a route.
    var byEndpoint: [String: Operation] {
        var result: [String: Operation] = [:]
        for (path, item) in paths {
            for (method, operation) in item.operations { result["\(method) \(path)"] = operation }
        }
        return result
    }
}

/// `GET /openapi.json` describes the router as built: the same routes, each with its scope, so a
/// route added without its description (or a description of a route that does not exist) fails here.
@Suite struct OpenAPIDocumentTests {
    private static func document() throws -> OpenAPIOperations {
        try JSONDecoder().decode(OpenAPIOperations.self, from: Data(OpenAPIRoute.bytes))
    }

    @Test func documentsExactlyTheRoutesOfTheRouter() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let document = try Self.document()
            #expect(document.openapi.hasPrefix("3.1."))
            let routes = Set(api.router.endpoints)
            let documented = Set(document.byEndpoint.keys)
            #expect(routes.subtracting(documented).isEmpty, "routes not in openapi.json")
            #expect(documented.subtracting(routes).isEmpty, "openapi.json describes routes that do not exist")
        }
    }

    @Test func eachOperationNamesTheScopeItsRouteNeeds() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let operations = try Self.document().byEndpoint
            for (endpoint, scope) in api.router.scopes {
                #expect(operations[endpoint]?.scope == scope.description, "\(endpoint)")
            }
            let identifiers = operations.values.map(\.operationId)
            #expect(Set(identifiers).count == identifiers.count, "operationIds must be unique")
        }
    }

    /// Every route reads its query with `QueryParameters`, which refuses unknown names with a 400,
    /// and every route but `/healthz` may answer 401 and 403: the document must say so.
    @Test func everyOperationListsTheErrorsEveryRouteCanGive() throws {
        for (endpoint, operation) in try Self.document().byEndpoint {
            var expected: Set<String> = ["400", "414", "421", "431"]
            if operation.scope != "none" { expected.formUnion(["401", "403", "429"]) }
            if endpoint.contains("{id}") { expected.insert("404") }
            let missing = expected.subtracting(operation.responses.keys)
            #expect(missing.isEmpty, "\(endpoint) does not list \(missing.sorted())")
        }
    }

    @Test func isServedAsStoredWithAnETag() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let served = await api.respond(.get, "/openapi.json")
            #expect(served.status == .ok)
            #expect(served.headers["Content-Type"] == "application/json")
            guard case .bytes(let bytes) = served.body else {
                Issue.record("not in memory")
                return
            }
            #expect(bytes == OpenAPIRoute.bytes)
            let etag = try #require(served.headers["ETag"])
            let again = await api.respond(.get, "/openapi.json", headers: ["If-None-Match": etag])
            #expect(again.status == .notModified)
            #expect(await api.respond(.get, "/openapi.json?x=1").status == .badRequest)
        }
    }
}
