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
    /// Where an offloaded picture is (`s3_mode offload`); nil when nothing is offloaded.
    var remoteMediaURL: (@Sendable (MediaRecord) -> String?)? = nil

    /// Thumbnail widths `?width=` accepts, in pixels (also `/preview.mjpg`'s `width`).
    static let thumbnailWidths: ClosedRange<Int64> = 16...4096
    /// The query parameters `GET /media/{id}.jpg` accepts (one set, not one a request).
    static let mediaParameters: Set<String> = ["width"]
    /// JPEG quality of thumbnails: small files, and a gallery shows them small.
    static let thumbnailQuality = 80

    func register(in router: inout Router) {
        router.add(
            .get, "/media/{id}.jpg", scope: .view,
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
        let query = try QueryParameters(request, allowed: Self.mediaParameters)
        // Opened even when a thumbnail is cached: a thumbnail a delete raced with must not
        // outlive its picture.
        guard let original = try openIfPresent(catalog.mediaPath(id: id)) else {
            // Perhaps offloaded: the task asks the catalog, which the event loop must not wait for.
            if remoteMediaURL != nil { return nil }
            throw LibraryRoutes.notFound(id)
        }
        guard let requested = try query.integer("width", in: Self.thumbnailWidths).map(Int.init) else {
            return try fileResponse(request, original, id: id, width: nil)
        }
        // A header past the first bytes (never seen) is left to the task, which reads everything.
        guard let size = try? JPEGDecoder.header(of: try readPrefix(original)) else { return nil }
        guard
            let made = Self.thumbnailWidth(
                requested: requested, pictureWidth: size.width, height: size.height)
        else { return try fileResponse(request, original, id: id, width: nil) }
        guard let cached = try openIfPresent(catalog.thumbnailPath(id: id, width: made)) else { return nil }
        return try fileResponse(request, cached, id: id, width: made)
    }

    /// `GET /media/{id}.jpg?width=N` with no cached thumbnail: makes, caches and serves one.
    ///
    /// A task, because decoding and encoding take milliseconds of CPU. The thumbnail is at least
    /// `width` wide and, unless `width` is under an eighth of the picture's, under twice it:
    /// TurboJPEG's scaled decode (n/8) is the only resampling. A picture no wider than
    /// `width` is served as it is. While the disk is full or at its floor (`min_free_bytes`), or
    /// when caching it would take the library past `retention_max_bytes`, the thumbnail is served
    /// without being cached.
    func thumbnail(_ request: HTTPRequest, _ parameters: RouteParameters) async throws -> HTTPResponse {
        let id = try parameters.positiveID(of: "picture")
        let query = try QueryParameters(request, allowed: Self.mediaParameters)
        guard let original = try openIfPresent(catalog.mediaPath(id: id)) else {
            return try await offloaded(id: id)
        }
        guard let requested = try query.integer("width", in: Self.thumbnailWidths).map(Int.init) else {
            return try fileResponse(request, original, id: id, width: nil)
        }
        let jpeg = try readAll(original)
        let header = try JPEGDecoder.header(of: jpeg)
        guard
            Self.thumbnailWidth(requested: requested, pictureWidth: header.width, height: header.height)
                != nil
        else { return try fileResponse(request, original, id: id, width: nil) }
        let scaled = try JPEGDecoder.decodeRGB(jpeg, minimumWidth: requested)
        let bytes = try JPEGEncoder(quality: Self.thumbnailQuality).encodeRGB(
            scaled.pixels, width: scaled.width, height: scaled.height)
        let cached: Bool
        do {
            cached = try await catalog.storeThumbnail(bytes, id: id, width: scaled.width)
        } catch CatalogError.storageFull {
            cached = false
        }
        guard cached else {
            return try bytesResponse(
                request, bytes, id: id, width: scaled.width, modified: modificationTime(original))
        }
        guard let stored = try openIfPresent(catalog.thumbnailPath(id: id, width: scaled.width)) else {
            // Deleted with its picture between the rename and this open.
            throw LibraryRoutes.notFound(id)
        }
        return try fileResponse(request, stored, id: id, width: scaled.width)
    }

    /// `302 Found` to where an offloaded picture is now (a presigned URL, valid for minutes, so
    /// not cached), whatever width was asked for; 404 for a picture that is not there.
    private func offloaded(id: Int64) async throws -> HTTPResponse {
        guard let remoteMediaURL, let record = try await catalog.record(id: id), record.offloaded,
            let url = remoteMediaURL(record)
        else { throw LibraryRoutes.notFound(id) }
        return HTTPResponse(
            status: HTTPStatus(code: 302, reason: "Found"),
            headers: ["Location": url, "Cache-Control": "no-store"])
    }

    /// The width of the thumbnail made for `requested` (at most seven per picture, so the cache,
    /// keyed by it, holds at most seven files a picture), or nil when the picture is no wider.
    static func thumbnailWidth(requested: Int, pictureWidth: Int, height: Int) -> Int? {
        guard requested < pictureWidth else { return nil }
        let made = JPEGDecoder.scaledSize(width: pictureWidth, height: height, minimumWidth: requested).width
        return made < pictureWidth ? made : nil
    }

    /// How many leading bytes of a picture are read for its size on the event loop: the frame
    /// header of every JPEG the daemon stores comes within the first kilobyte or two.
    static let headerPrefixBytes = 8192

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
        return try read(handle, count: Int(info.st_size))
    }

    /// The first `headerPrefixBytes` of the open file `handle` (fewer if it is shorter).
    private func readPrefix(_ handle: FileRegion.Handle) throws -> [UInt8] {
        try read(handle, count: Self.headerPrefixBytes)
    }

    /// Up to `count` bytes from the start of `handle`, read with pread(2).
    private func read(_ handle: FileRegion.Handle, count: Int) throws -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
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

    /// The modification time of the open file `handle`, in seconds since 1970.
    private func modificationTime(_ handle: FileRegion.Handle) throws -> Int64 {
        var info = stat()
        _ = try syscall("fstat") { fstat(handle.descriptor, &info) }
        return Int64(info.st_mtim.tv_sec)
    }

    /// The response for an open picture or thumbnail (`width`), honouring validators and ranges.
    private func fileResponse(
        _ request: HTTPRequest, _ handle: FileRegion.Handle, id: Int64, width: Int?
    ) throws -> HTTPResponse {
        var info = stat()
        _ = try syscall("fstat") { fstat(handle.descriptor, &info) }
        return try response(
            request, length: Int(info.st_size), modified: Int64(info.st_mtim.tv_sec), id: id, width: width
        ) { range in .file(FileRegion(handle: handle, offset: range.lowerBound, length: range.count)) }
    }

    /// The response for a thumbnail made but not cached, from memory.
    private func bytesResponse(
        _ request: HTTPRequest, _ bytes: [UInt8], id: Int64, width: Int, modified: Int64
    )
        throws -> HTTPResponse
    {
        try response(request, length: bytes.count, modified: modified, id: id, width: width) { range in
            .bytes(range.count == bytes.count ? bytes : Array(bytes[range]))
        }
    }

    /// The response for `length` bytes of a picture or thumbnail, whose `body(range)` gives the
    /// bytes of `range`, honouring validators and ranges.
    private func response(
        _ request: HTTPRequest, length: Int, modified: Int64, id: Int64, width: Int?,
        body: (Range<Int>) -> HTTPBody
    ) throws -> HTTPResponse {
        // Pictures never change and ids are never reused, so id and size identify the bytes;
        // a thumbnail's width (the width made) makes it a different representation.
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
            return HTTPResponse(status: .ok, headers: headers, body: body(0..<length))
        case .partial(let range):
            headers.add(
                name: "Content-Range", value: "bytes \(range.lowerBound)-\(range.upperBound - 1)/\(length)")
            return HTTPResponse(status: .partialContent, headers: headers, body: body(range))
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
