import ShutterCatalog
import ShutterSystem

/// POSTs each event it wants to one webhook: delivered on a 2xx, retried by the dispatcher on
/// anything else or no answer.
public final class WebhookSink: OutboxSink {
    public let name: String
    public let eventTypes: Set<CatalogEventType>
    private let settings: WebhookSettings
    private let transport: any HTTPTransport
    private let mediaPath: @Sendable (Int64) -> String
    private let connected = LockedValue(false)

    /// The largest picture a hook is sent; a bigger file is not a picture Shutter stored.
    static let maxPictureBytes = 64 << 20

    /// `mediaPath` says where a picture's JPEG is (`MediaCatalog.mediaPath(id:)`).
    public init(
        settings: WebhookSettings, transport: any HTTPTransport,
        mediaPath: @escaping @Sendable (Int64) -> String
    ) {
        self.name = settings.sinkName
        self.eventTypes = settings.events
        self.settings = settings
        self.transport = transport
        self.mediaPath = mediaPath
    }

    public var isConnected: Bool { connected.withLock { $0 } }

    public func deliver(_ event: CatalogEvent) async throws {
        var jpeg: [UInt8]?
        if settings.includeJPEG, event.type == .pictureCreated || event.type == .pictureUpdated,
            let picture = OutboxMessage.pictureFields(of: event)
        {
            // Gone since (deleted, or removed by retention): the event still goes, without it.
            jpeg = try await transport.readFile(atPath: mediaPath(picture.id), maxBytes: Self.maxPictureBytes)
        }
        let boundary = "shutter-" + ByteText.hex((try? Secrets.randomBytes(count: 12)) ?? [])
        let request = WebhookRequest.make(event, settings: settings, jpeg: jpeg, boundary: boundary)
        let response: HTTPTransferResponse
        do {
            response = try await transport.send(request)
        } catch {
            connected.withLock { $0 = false }
            throw error
        }
        connected.withLock { $0 = true }
        guard response.isSuccess else {
            throw DestinationRefusal(
                status: response.status, detail: String(decoding: response.body.prefix(200), as: UTF8.self))
        }
    }
}
