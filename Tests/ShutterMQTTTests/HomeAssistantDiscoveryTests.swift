import FoundationEssentials
import ShutterMQTT
import Testing

@Suite struct HomeAssistantDiscoveryTests {
    private func discovery(publishesJPEG: Bool = true) throws -> HomeAssistantDiscovery {
        HomeAssistantDiscovery(
            topics: try MQTTTopics(prefix: "shutterd/garage"), name: "garage cam", softwareVersion: "0.1.0",
            publishesJPEG: publishesJPEG)
    }

    private func object(_ publication: MQTTPublication) throws -> [String: JSONAny] {
        try JSONDecoder().decode([String: JSONAny].self, from: Data(publication.payload))
    }

    @Test func oneRetainedConfigPerEntityUnderOneDevice() throws {
        let configs = try discovery().configs
        #expect(
            configs.map(\.topic) == [
                "homeassistant/camera/shutterd_garage_cam/picture/config",
                "homeassistant/button/shutterd_garage_cam/snap/config",
                "homeassistant/switch/shutterd_garage_cam/interval/config",
                "homeassistant/sensor/shutterd_garage_cam/last_picture/config",
                "homeassistant/sensor/shutterd_garage_cam/pictures/config",
                "homeassistant/binary_sensor/shutterd_garage_cam/camera/config",
            ])
        #expect(configs.allSatisfy { $0.retain && $0.qos == 1 })
        var uniqueIDs: Set<String> = []
        for config in configs {
            let fields = try object(config)
            #expect(fields["availability_topic"] == .string("shutterd/garage/availability"))
            #expect(fields["device"]?["identifiers"] == .array([.string("shutterd_garage_cam")]))
            #expect(fields["device"]?["name"] == .string("garage cam"))
            if case .string(let id)? = fields["unique_id"] { uniqueIDs.insert(id) }
        }
        #expect(uniqueIDs.count == configs.count)
    }

    @Test func eachEntityPointsAtItsTopics() throws {
        let configs = try discovery().configs.map(object)
        #expect(configs[0]["topic"] == .string("shutterd/garage/picture/jpeg"))
        #expect(configs[1]["command_topic"] == .string("shutterd/garage/snap/set"))
        #expect(configs[1]["payload_press"] == .string("{}"))
        #expect(configs[2]["command_topic"] == .string("shutterd/garage/job/set"))
        #expect(configs[2]["state_topic"] == .string("shutterd/garage/job/state"))
        #expect(configs[3]["device_class"] == .string("timestamp"))
        #expect(configs[4]["state_topic"] == .string("shutterd/garage/state"))
        #expect(configs[5]["state_topic"] == .string("shutterd/garage/camera"))
        #expect(configs[5]["device_class"] == .string("connectivity"))
    }

    @Test func withoutTheJPEGTopicTheCameraIsRemoved() throws {
        let camera = try discovery(publishesJPEG: false).configs[0]
        #expect(camera.topic.hasPrefix("homeassistant/camera/") && camera.payload.isEmpty && camera.retain)
    }

    @Test func namesBecomeIdentifiersAndPrefixes() throws {
        #expect(MQTTTopics.identifier("Küche #2/oben") == "K_che__2_oben")
        #expect(MQTTTopics.identifier("") == "shutterd")
        #expect(MQTTTopics.defaultPrefix(name: "pi.local") == "shutterd/pi_local")
        #expect(try MQTTTopics(prefix: "a/b").snapCommand == "a/b/snap/set")
        for bad in ["", "a/", "a/+/b", "a/#"] {
            #expect(throws: MQTTConfigurationError.self) { try MQTTTopics(prefix: bad) }
        }
    }
}

/// Any JSON value, compared structurally.
indirect enum JSONAny: Decodable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case array([JSONAny])
    case object([String: JSONAny])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONAny].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONAny].self))
        }
    }

    subscript(key: String) -> JSONAny? {
        if case .object(let fields) = self { return fields[key] }
        return nil
    }
}
