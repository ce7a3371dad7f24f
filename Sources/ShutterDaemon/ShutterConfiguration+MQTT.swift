import ShutterMQTT

#if canImport(Glibc)
    import Glibc
#endif

/// The `mqtt_*` keys and `name`: the MQTT sink and Home Assistant (docs/integrations.md).
public struct MQTTConfiguration: Sendable, Equatable {
    /// The broker; nil (the default) leaves MQTT off.
    public var url: MQTTBrokerURL?
    /// Empty: `shutterd/<name>`.
    public var topicPrefix = ""
    public var discoveryPrefix = "homeassistant"
    public var publishJPEG = true
    public var jpegMaximumBytes = 4_194_304
    /// The interval of a job started by a plain `ON` on `…/job/set`.
    public var jobEverySeconds = 10

    public init() {}
}

extension ShutterConfiguration {
    /// `name`, or the host name when it is empty (`shutterd` if even that is unknown).
    public var effectiveName: String {
        if !name.isEmpty { return name }
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count - 1) == 0 else { return "shutterd" }
        let host = String(
            decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return host.isEmpty ? "shutterd" : host
    }

    /// The topic prefix in force: `mqtt_topic_prefix`, else `shutterd/<name>`.
    public var effectiveMQTTTopicPrefix: String {
        mqtt.topicPrefix.isEmpty ? MQTTTopics.defaultPrefix(name: effectiveName) : mqtt.topicPrefix
    }
}

extension ConfigurationKey {
    /// MQTT and Home Assistant.
    static let mqttKeys: [ConfigurationKey] = [
        ConfigurationKey(
            name: "name", valueName: "NAME",
            help:
                "this daemon's name: the Home Assistant device's, and in the default MQTT topic prefix (empty: the host name)",
            apply: { config, text in config.name = text },
            current: { $0.name.isEmpty ? "the host name" : $0.name }),
        ConfigurationKey(
            name: "mqtt_url", valueName: "URL",
            help:
                "MQTT broker to publish pictures, jobs and camera states to and take snap and job commands from: mqtt://USER:PASS@HOST:PORT, or mqtts:// (TLS verified against the system's certificates); empty: MQTT off",
            apply: { config, text in
                do {
                    config.mqtt.url = text.isEmpty ? nil : try MQTTBrokerURL(text)
                } catch {
                    throw ConfigurationError(String(describing: error))
                }
            },
            // The password never leaves the process: `--help` and the table see "***".
            current: { $0.mqtt.url?.description ?? "none" }),
        ConfigurationKey(
            name: "mqtt_topic_prefix", valueName: "TOPIC",
            help: "the MQTT topics' common prefix, PREFIX below (empty: shutterd/NAME)",
            apply: { config, text in
                if !text.isEmpty {
                    do { _ = try MQTTTopics(prefix: text) } catch {
                        throw ConfigurationError(String(describing: error))
                    }
                }
                config.mqtt.topicPrefix = text
            },
            current: { $0.mqtt.topicPrefix.isEmpty ? "shutterd/NAME" : $0.mqtt.topicPrefix }),
        ConfigurationKey(
            name: "mqtt_discovery_prefix", valueName: "TOPIC",
            help: "where Home Assistant reads MQTT discovery configs",
            apply: { config, text in
                do { _ = try MQTTTopics(prefix: text) } catch {
                    throw ConfigurationError("mqtt_discovery_prefix: " + String(describing: error))
                }
                config.mqtt.discoveryPrefix = text
            },
            current: { $0.mqtt.discoveryPrefix }),
        boolean(
            "mqtt_publish_jpeg",
            "publish each new picture's JPEG, retained, on PREFIX/picture/jpeg (the Home Assistant camera's image)",
            \.mqtt.publishJPEG),
        .integer(
            "mqtt_jpeg_max_bytes", "BYTES",
            "pictures larger than this are not published as JPEG, only their record (1024 to 268435455)",
            range: 1024...268_435_455, \.mqtt.jpegMaximumBytes),
        .integer(
            "mqtt_job_every_s", "S",
            "the interval of the job a plain ON on PREFIX/job/set starts (1 to 86400)",
            range: 1...86_400, \.mqtt.jobEverySeconds),
    ]
}
