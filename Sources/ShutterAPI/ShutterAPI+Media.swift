import ShutterHTTP
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

extension ShutterAPI {
    /// `GET /media/{id}.jpg`: the stored JPEG, sent with `sendfile`, with validators and ranges.
    ///
    /// Runs on the event loop: opening and stat-ing one file never blocks for long,
    /// and skipping the catalog keeps this as cheap as a static file server.
    func media(_ request: HTTPRequest, _ parameters: RouteParameters) throws -> HTTPResponse {
        let id = try pictureID(parameters)
        _ = try QueryParameters(request, allowed: [])
        let path = catalog.mediaPath(id: id)
        let descriptor: Int32
        do {
            descriptor = try syscall("open") { open(path, O_RDONLY | O_CLOEXEC) }
        } catch let error as SystemError where error.errno == ENOENT {
            throw notFound(id)
        }
        let handle = FileRegion.Handle(descriptor: descriptor)
        var info = stat()
        _ = try syscall("fstat") { fstat(descriptor, &info) }
        let length = Int(info.st_size)
        let modified = Int64(info.st_mtim.tv_sec)
        // Pictures never change and ids are never reused, so id and size identify the bytes.
        let validators = RepresentationValidators(
            etag: "\"\(id)-\(length)\"", lastModified: modified, length: length)
        var headers: HTTPHeaders = [
            "Content-Type": "image/jpeg",
            "ETag": validators.etag,
            "Last-Modified": Timestamp.httpDate(secondsSince1970: modified),
            "Cache-Control": "public, max-age=31536000, immutable",
            "Accept-Ranges": "bytes",
        ]
        switch validators.evaluate(request.headers) {
        case .whole:
            return HTTPResponse(
                status: .ok, headers: headers,
                body: .file(FileRegion(handle: handle, offset: 0, length: length)))
        case .partial(let range):
            headers.add(
                name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(length)")
            return HTTPResponse(
                status: .partialContent, headers: headers,
                body: .file(FileRegion(handle: handle, offset: range.lowerBound, length: range.count)))
        case .notModified:
            headers.remove(name: "Content-Type")
            headers.remove(name: "Accept-Ranges")
            return HTTPResponse(status: .notModified, headers: headers)
        case .rangeNotSatisfiable:
            throw HTTPError(
                .rangeNotSatisfiable,
                detail: "the picture has \(length) bytes; the requested range is outside them",
                headers: ["Content-Range": "bytes */\(length)"])
        case .preconditionFailed:
            throw HTTPError(
                .preconditionFailed, detail: "the picture does not match If-Match or If-Unmodified-Since")
        }
    }
}
