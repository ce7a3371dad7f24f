import ShutterSystem

/// Home Assistant's MQTT discovery configs for one daemon: retained messages under
/// `homeassistant/<component>/<node>/<object>/config` that make one device with a camera, a snap
/// button, an interval-job switch, two sensors and a camera-connected binary sensor.
///
/// Published at every connect (the broker may have lost them); each entity follows the daemon's
/// availability topic, so all go unavailable when the will says `offline`.
/// See https://www.home-assistant.io/integrations/mqtt/#mqtt-discovery.
public struct HomeAssistantDiscovery: Sendable, Equatable {
    public var topics: MQTTTopics
    /// Shown as the device's name; its identifier is made from it.
    public var name: String
    /// `homeassistant` unless Home Assistant was told another.
    public var discoveryPrefix: String
    public var softwareVersion: String
    /// Without the JPEG topic there is no camera entity; its config is then cleared.
    public var publishesJPEG: Bool

    public init(
        topics: MQTTTopics, name: String, discoveryPrefix: String = "homeassistant", softwareVersion: String,
        publishesJPEG: Bool
    ) {
        self.topics = topics
        self.name = name
        self.discoveryPrefix = discoveryPrefix
        self.softwareVersion = softwareVersion
        self.publishesJPEG = publishesJPEG
    }

    /// The node id in the config topics and the prefix of every entity's `unique_id`.
    public var nodeID: String { "shutterd_" + MQTTTopics.identifier(name) }

    /// Every config, retained (QoS 1); an empty retained payload removes the camera when the JPEG
    /// topic is off.
    public var configs: [MQTTPublication] {
        var camera = entity("Picture", objectID: "picture")
        camera.field("topic", topics.pictureJPEG)
        var button = entity("Snap", objectID: "snap")
        button.field("command_topic", topics.snapCommand)
        button.field("payload_press", "{}")
        button.field("icon", "mdi:camera-iris")
        var interval = entity("Interval job", objectID: "interval")
        interval.field("command_topic", topics.jobCommand)
        interval.field("state_topic", topics.jobState)
        interval.field("payload_on", "ON")
        interval.field("payload_off", "OFF")
        interval.field("icon", "mdi:timer-play")
        var lastPicture = entity("Last picture", objectID: "last_picture")
        lastPicture.field("state_topic", topics.state)
        lastPicture.field("value_template", "{{ value_json.last_picture_at }}")
        lastPicture.field("device_class", "timestamp")
        var pictures = entity("Pictures stored", objectID: "pictures")
        pictures.field("state_topic", topics.state)
        pictures.field("value_template", "{{ value_json.pictures }}")
        pictures.field("state_class", "measurement")
        pictures.field("unit_of_measurement", "pictures")
        pictures.field("icon", "mdi:image-multiple")
        var cameraConnected = entity("Camera connected", objectID: "camera")
        cameraConnected.field("state_topic", topics.camera)
        cameraConnected.field(
            "value_template", "{{ 'ON' if value_json.state in ['streaming', 'reopened'] else 'OFF' }}")
        cameraConnected.field("device_class", "connectivity")
        return [
            MQTTPublication(
                topic: configTopic("camera", "picture"), text: publishesJPEG ? finished(camera) : "",
                retain: true),
            MQTTPublication(topic: configTopic("button", "snap"), text: finished(button), retain: true),
            MQTTPublication(topic: configTopic("switch", "interval"), text: finished(interval), retain: true),
            MQTTPublication(
                topic: configTopic("sensor", "last_picture"), text: finished(lastPicture), retain: true),
            MQTTPublication(topic: configTopic("sensor", "pictures"), text: finished(pictures), retain: true),
            MQTTPublication(
                topic: configTopic("binary_sensor", "camera"), text: finished(cameraConnected), retain: true),
        ]
    }

    /// `homeassistant/<component>/<node>/<object>/config`.
    public func configTopic(_ component: String, _ objectID: String) -> String {
        "\(discoveryPrefix)/\(component)/\(nodeID)/\(objectID)/config"
    }

    /// The fields every entity has: its name, ids, availability and the device it belongs to.
    private func entity(_ entityName: String, objectID: String) -> JSONObjectWriter {
        var object = JSONObjectWriter()
        object.field("name", entityName)
        object.field("unique_id", "\(nodeID)_\(objectID)")
        object.field("object_id", "\(nodeID)_\(objectID)")
        object.field("availability_topic", topics.availability)
        object.field("payload_available", "online")
        object.field("payload_not_available", "offline")
        return object
    }

    private func finished(_ entity: JSONObjectWriter) -> String {
        var object = entity
        var device = JSONObjectWriter()
        device.rawField("identifiers", "[" + JSONString.quote(nodeID) + "]")
        device.field("name", name)
        device.field("manufacturer", "Shutter")
        device.field("model", "shutterd")
        device.field("sw_version", softwareVersion)
        object.rawField("device", device.finished())
        return object.finished()
    }
}
