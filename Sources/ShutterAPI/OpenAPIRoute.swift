import ShutterHTTP
import ShutterSystem

/// `GET /openapi.json`: the OpenAPI 3.1 document of the whole HTTP API.
///
/// `Resources/openapi.json` is the API's description kept beside the handlers it describes and
/// compiled into the binary by SwiftPM (`.embedInCode`), as ShutterWeb embeds its page: the
/// daemon serves exactly the file in the repository. `OpenAPIDocumentTests` holds it to the
/// router (the same paths and methods, each with its scope), and the schemathesis end-to-end
/// test holds the running daemon to it.
struct OpenAPIRoute: Sendable {
    /// The document as stored in the repository.
    static let bytes: [UInt8] = PackageResources.openapi_json

    /// A strong entity tag: the bytes change only with a new build.
    static let etag = "\"" + SHA256.hexDigest(bytes).prefix(32) + "\""

    func register(in router: inout Router) {
        router.add(.get, "/openapi.json", scope: .view, .immediate { request, _ in try document(request) })
    }

    /// The document, or `304` when `If-None-Match` names this build's.
    func document(_ request: HTTPRequest) throws -> HTTPResponse {
        _ = try QueryParameters(request, allowed: [])
        let headers: HTTPHeaders = ["ETag": Self.etag, "Cache-Control": "no-cache"]
        if let ifNoneMatch = request.headers["If-None-Match"],
            RepresentationValidators.list(ifNoneMatch, matches: Self.etag, weak: true)
        {
            return HTTPResponse(status: .notModified, headers: headers)
        }
        var answer = headers
        answer.add(name: "Content-Type", value: "application/json")
        return HTTPResponse(status: .ok, headers: answer, body: .bytes(Self.bytes))
    }
}
