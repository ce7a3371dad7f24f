import ShutterCatalog
import ShutterSystem

/// What the sink publishes for one event of the history, decided with no I/O: the sink reads
/// the JPEG and asks the daemon for the library's and the job's state beforehand.
///
/// Every JSON message carries `event_id` (for deduplication: delivery is at least once) and
/// `event` (its type) before the event's own fields.
public struct MQTTEventMessages: Sendable {
    public var topics: MQTTTopics

    public init(topics: MQTTTopics) {
        self.topics = topics
    }

    /// What the sink needs to know besides the event to publish it.
    public struct Context: Sendable, Equatable {
        /// The picture's bytes, for `picture.created` with the JPEG topic on (nil: not sent).
        public var jpeg: [UInt8]?
        /// For picture events: the sensors' state after it.
        public var library: MQTTLibraryState?
        /// For job events: whether an interval job started over MQTT is running.
        public var intervalJobRunning: Bool?

        public init(jpeg: [UInt8]? = nil, library: MQTTLibraryState? = nil, intervalJobRunning: Bool? = nil) {
            self.jpeg = jpeg
            self.library = library
            self.intervalJobRunning = intervalJobRunning
        }
    }

    /// The publications for `event`, in the order they are sent: the JPEG before its record, so a
    /// subscriber that reacts to the record finds the picture already retained.
    public func publications(for event: CatalogEvent, context: Context = Context()) -> [MQTTPublication] {
        let message = Self.message(event)
        var publications: [MQTTPublication] = []
        switch event.type {
        case .pictureCreated, .pictureUpdated:
            if let jpeg = context.jpeg {
                publications.append(MQTTPublication(topic: topics.pictureJPEG, payload: jpeg, retain: true))
            }
            publications.append(MQTTPublication(topic: topics.picture, text: message))
        case .pictureDeleted:
            publications.append(MQTTPublication(topic: topics.pictureDeleted, text: message))
        case .jobCreated, .jobUpdated, .jobEnded:
            publications.append(MQTTPublication(topic: topics.job, text: message))
            if let running = context.intervalJobRunning {
                publications.append(
                    MQTTPublication(topic: topics.jobState, text: running ? "ON" : "OFF", retain: true))
            }
        case .cameraState:
            publications.append(MQTTPublication(topic: topics.camera, text: message, retain: true))
        case .storageState:
            break
        }
        if let library = context.library {
            publications.append(
                MQTTPublication(topic: topics.state, text: Self.stateMessage(library), retain: true))
        }
        return publications
    }

    /// `event.data` with `event_id` and `event` put first.
    public static func message(_ event: CatalogEvent) -> String {
        var head = JSONObjectWriter()
        head.field("event_id", event.id)
        head.field("event", event.type.rawValue)
        head.field("at", Timestamp.iso8601(millisecondsSince1970: event.at))
        let fields = event.data.drop(while: { $0 == " " }).dropFirst().drop(while: { $0 == " " })
        // `data` is a JSON object: splice its fields after ours (an empty one adds none).
        if fields.hasPrefix("}") { return head.finished() }
        return String(head.finished().dropLast()) + "," + fields
    }

    /// The retained message the sensors read: `{"pictures": 12, "last_picture_at": "…"}`.
    public static func stateMessage(_ library: MQTTLibraryState) -> String {
        var object = JSONObjectWriter()
        object.field("pictures", library.pictures)
        object.field("last_picture_at", library.lastPictureAt)
        return object.finished()
    }
}
