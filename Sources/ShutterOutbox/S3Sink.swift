import ShutterCatalog
import ShutterSystem

/// Mirrors the library into an S3-compatible bucket: each stored picture uploaded (again when its
/// record changes, so the metadata follows), each deleted picture deleted there.
public final class S3Sink: OutboxSink {
    public let name = "s3"
    public let eventTypes: Set<CatalogEventType> = [.pictureCreated, .pictureUpdated, .pictureDeleted]
    private let settings: S3Settings
    private let transport: any HTTPTransport
    private let mediaPath: @Sendable (Int64) -> String
    private let logger: Logger
    private let onUploaded: @Sendable (Int64) async -> Void
    private let connected = LockedValue(false)

    /// `onUploaded` is told each picture the store acknowledged (the catalog records it, which
    /// offload needs before it may free the local file).
    public init(
        settings: S3Settings, transport: any HTTPTransport, mediaPath: @escaping @Sendable (Int64) -> String,
        logger: Logger, onUploaded: @escaping @Sendable (Int64) async -> Void = { _ in }
    ) {
        self.settings = settings
        self.transport = transport
        self.mediaPath = mediaPath
        self.onUploaded = onUploaded
        self.logger = logger.with("sink", "s3")
    }

    public var isConnected: Bool { connected.withLock { $0 } }

    public func deliver(_ event: CatalogEvent) async throws {
        guard let picture = OutboxMessage.pictureFields(of: event) else {
            logger.warning("picture event without a picture id; passed over", ["event_id": String(event.id)])
            return
        }
        guard let takenAt = picture.takenAt,
            let key = settings.location.objectKey(pictureID: picture.id, takenAt: takenAt)
        else {
            logger.warning(
                "picture event without taken_at; its object cannot be named, passed over",
                ["event_id": String(event.id), "id": String(picture.id)])
            return
        }
        switch event.type {
        case .pictureDeleted:
            // 404: it never got there (deleted before its upload) or is already gone; both done.
            try await send(S3Request.delete(key: key, settings: settings), accepting: [200, 204, 404])
        default:
            // Offloaded: the store has it and the local file is gone; nothing to upload again.
            if picture.stored == ["s3"] { return }
            try await upload(picture, key: key, event: event)
        }
    }

    private func upload(_ picture: OutboxMessage.PictureFields, key: String, event: CatalogEvent) async throws
    {
        guard
            let jpeg = try await transport.readFile(
                atPath: mediaPath(picture.id), maxBytes: WebhookSink.maxPictureBytes)
        else {
            // Deleted (or removed by retention) before it could be uploaded: its picture.deleted
            // event follows, and there is nothing to upload.
            logger.info("picture gone before its upload; passed over", ["id": String(picture.id)])
            return
        }
        let digest = SHA256.digest(jpeg)
        if let recorded = picture.sha256, ByteText.hex(digest) != recorded.lowercased() {
            // A file that no longer matches its record would be refused for ever (the store checks
            // the checksum) and hold up every later picture: logged, and left out.
            logger.error(
                "picture file does not match its recorded sha256; not uploaded",
                ["id": String(picture.id), "event_id": String(event.id)])
            return
        }
        let request = S3Request.upload(
            key: key, jpeg: jpeg, payloadSHA256: digest, picture: picture, settings: settings)
        try await send(request, accepting: [200])
        await onUploaded(picture.id)
    }

    private func send(_ request: HTTPTransferRequest, accepting statuses: Set<Int>) async throws {
        let response: HTTPTransferResponse
        do {
            response = try await transport.send(request)
        } catch {
            connected.withLock { $0 = false }
            throw error
        }
        connected.withLock { $0 = true }
        guard statuses.contains(response.status) else {
            throw DestinationRefusal(status: response.status, detail: Self.errorCode(in: response.body))
        }
    }

    /// The `<Code>` of an S3 error document (`SignatureDoesNotMatch`, `NoSuchBucket`, …), or the
    /// start of the body.
    static func errorCode(in body: [UInt8]) -> String {
        let text = String(decoding: body, as: UTF8.self)
        let afterOpening = text.split(separator: "<Code>", maxSplits: 1, omittingEmptySubsequences: false)
        if afterOpening.count == 2,
            let code = afterOpening[1].split(
                separator: "</Code>", maxSplits: 1, omittingEmptySubsequences: false
            )
            .first, afterOpening[1].contains("</Code>")
        {
            return String(code)
        }
        return String(text.prefix(200))
    }
}
