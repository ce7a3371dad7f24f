/// The topics of one daemon, all under its prefix (`shutterd/<name>` by default).
public struct MQTTTopics: Sendable, Equatable {
    public let prefix: String

    /// Throws for a prefix MQTT cannot publish under: empty, with a wildcard (`+`, `#`) or a
    /// NUL, or ending in `/` (every topic would have an empty level).
    public init(prefix: String) throws(MQTTConfigurationError) {
        guard !prefix.isEmpty, !prefix.hasSuffix("/"),
            !prefix.contains(where: { $0 == "+" || $0 == "#" || $0 == "\0" })
        else {
            throw MQTTConfigurationError(
                "mqtt_topic_prefix must be non-empty, without +, # or a trailing /")
        }
        self.prefix = prefix
    }

    /// The default prefix for a daemon called `name`: `shutterd/<name>`, the name's characters
    /// that MQTT topics or Home Assistant ids cannot carry replaced by `_`.
    public static func defaultPrefix(name: String) -> String {
        "shutterd/" + identifier(name)
    }

    /// `online` or `offline` (the broker-held will), retained.
    public var availability: String { prefix + "/availability" }
    /// Each picture's record as JSON, with the event id (QoS 1).
    public var picture: String { prefix + "/picture" }
    /// The newest picture's JPEG bytes, retained (the Home Assistant camera's image).
    public var pictureJPEG: String { prefix + "/picture/jpeg" }
    /// Pictures removed, by a request or retention.
    public var pictureDeleted: String { prefix + "/picture/deleted" }
    /// Job events: the job as JSON.
    public var job: String { prefix + "/job" }
    /// `ON` while an interval job started over MQTT runs, retained (the switch's state).
    public var jobState: String { prefix + "/job/state" }
    /// The camera's state (`{"state":"streaming","reason":...}`), retained.
    public var camera: String { prefix + "/camera" }
    /// The library's state: pictures stored and the last one's time, retained (the sensors').
    public var state: String { prefix + "/state" }
    /// Takes a picture: `{}` or the snap options.
    public var snapCommand: String { prefix + "/snap/set" }
    /// Starts or stops the interval job: `ON`, `OFF` or `{"state": "ON", "every": 5}`.
    public var jobCommand: String { prefix + "/job/set" }

    /// `name` with everything but letters, digits, `-` and `_` replaced by `_` (Home Assistant's
    /// node ids allow only those), and at most 64 bytes; `shutterd` when nothing is left.
    public static func identifier(_ name: String) -> String {
        let cleaned = String(
            name.unicodeScalars.prefix(64).map { scalar -> Character in
                scalar.isASCII
                    && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || scalar == "-"
                        || scalar == "_")
                    ? Character(scalar) : "_"
            })
        return cleaned.isEmpty ? "shutterd" : cleaned
    }
}
