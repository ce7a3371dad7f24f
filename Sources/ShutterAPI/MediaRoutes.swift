import ShutterCamera
import ShutterCatalog
import ShutterHTTP
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// `/media/{id}.jpg`: a stored picture's bytes, or a thumbnail of it.
struct MediaRoutes: Sendable {
    let catalog: MediaCatalog

    /// Thumbnail widths `?width=` accepts, in pixels (also `/preview.mjpg`'s `width`).
    static let thumbnailWidths: ClosedRange<Int64> = 16...4096
    /// JPEG quality of thumbnails: small files, and a gallery shows them small.
    static let thumbnailQuality = 80

    func register(in router: inout Router) {
        router.add(
            .get, "/media/{id}.jpg",
            .immediateOrTask(
                immediate: { request, parameters in try media(request, parameters) },
                task: { request, parameters in try await thumbnail(request, parameters) }))
    }

    /// `GET /media/{id}.jpg`: the stored JPEG, sent with `sendfile`, with validators and ranges.
    ///
    /// Runs on the event loop: opening and stat-ing one file never blocks for long,
    /// and skipping the catalog keeps this as cheap as a static file server. With
    /// `?width=`, a cached thumbnail is served here too; nil hands a missing one to `thumbnail`.
    func media(_ request: HTTPRequest, _ parameters: RouteParameters) throws -> HTTPResponse? {
        let id = try parameters.positiveID(of: "picture")
        let query = try QueryParameters(request, allowed: ["width"])
        // Opened even when a thumbnail is cached: a thumbnail a delete raced with must not
        // outlive its picture.
        let original = try openPicture(id: id)
        guard let width = try query.integer("width", in: Self.thumbnailWidths).map(Int.init) else {
            return try fileResponse(request, original, id: id, width: nil)
        }
        guard let cached = try openIfPresent(catalog.thumbnailPath(id: id, width: width)) else { return nil }
        return try fileResponse(request, cached, id: id, width: width)
    }

    /// `GET /media/{id}.jpg?width=N` with no cached thumbnail: makes, caches and serves one.
    ///
    /// A task, because decoding and encoding take milliseconds of CPU. The thumbnail is at least
    /// `width` wide and, unless `width` is under an eighth of the picture's, under twice it:
    /// TurboJPEG's scaled decode (n/8) is the only resampling. A picture no wider than
    /// `width` is served as it is.
    func thumbnail(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try parameters.positiveID(of: "picture")
        let query = try QueryParameters(request, allowed: ["width"])
        let original = try openPicture(id: id)
        guard let width = try query.integer("width", in: Self.thumbnailWidths).map(Int.init) else {
            return try fileResponse(request, original, id: id, width: nil)
        }
        let jpeg = try readAll(original)
        let header = try JPEGDecoder.header(of: jpeg)
        guard width < header.width else { return try fileResponse(request, original, id: id, width: nil) }
        let scaled = try JPEGDecoder.decodeRGB(jpeg, minimumWidth: width)
        let bytes = try JPEGEncoder(quality: Self.thumbnailQuality).encodeRGB(
            scaled.pixels, width: scaled.width, height: scaled.height)
        try catalog.storeThumbnail(bytes, id: id, width: width)
        guard let stored = try openIfPresent(catalog.thumbnailPath(id: id, width: width)) else {
            // Deleted with its picture between the rename and this open.
            throw LibraryRoutes.notFound(id)
        }
        return try fileResponse(request, stored, id: id, width: width)
    }

    /// The picture file of `id`, or 404.
    private func openPicture(id: Int64) throws -> FileRegion.Handle {
        guard let handle = try openIfPresent(catalog.mediaPath(id: id)) else {
            throw LibraryRoutes.notFound(id)
        }
        return handle
    }

    /// The file at `path` opened for reading, or nil if there is none.
    private func openIfPresent(_ path: String) throws -> FileRegion.Handle? {
        do {
            return FileRegion.Handle(descriptor: try syscall("open") { open(path, O_RDONLY | O_CLOEXEC) })
        } catch let error as SystemError where error.errno == ENOENT {
            return nil
        }
    }

    /// Every byte of the open file `handle`, read with pread(2) so the offset `sendfile` uses is untouched.
    private func readAll(_ handle: FileRegion.Handle) throws -> [UInt8] {
        var info = stat()
        _ = try syscall("fstat") { fstat(handle.descriptor, &info) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        try bytes.withUnsafeMutableBytes { buffer in
            while offset < buffer.count {
                let read = try syscall("pread") {
                    pread(
                        handle.descriptor, buffer.baseAddress! + offset, buffer.count - offset, off_t(offset))
                }
                // A picture never shrinks; a short file here is one being replaced, which ids rule out.
                guard read > 0 else { break }
                offset += read
            }
        }
        return Array(bytes.prefix(offset))
    }

    /// The response for an open picture or thumbnail (`width`), honouring validators and ranges.
    private func fileResponse(
        _ request: HTTPRequest, _ handle: FileRegion.Handle, id: Int64, width: Int?
    ) throws -> HTTPResponse {
        var info = stat()
        _ = try syscall("fstat") { fstat(handle.descriptor, &info) }
        let length = Int(info.st_size)
        let modified = Int64(info.st_mtim.tv_sec)
        // Pictures never change and ids are never reused, so id and size identify the bytes;
        // a thumbnail's width makes it a different representation.
        let tag = width.map { "\"\(id)-\(length)-w\($0)\"" } ?? "\"\(id)-\(length)\""
        let validators = RepresentationValidators(etag: tag, lastModified: modified, length: length)
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
