/// One PUBLISH the sink sends: where, what, and how the broker keeps it.
public struct MQTTPublication: Sendable, Equatable {
    public var topic: String
    public var payload: [UInt8]
    /// 0 or 1; the sink's event messages are all QoS 1, so the broker's PUBACK is the acknowledgement.
    public var qos: Int32
    /// Whether the broker keeps it for subscribers that come later (states, discovery configs).
    public var retain: Bool

    public init(topic: String, payload: [UInt8], qos: Int32 = 1, retain: Bool = false) {
        self.topic = topic
        self.payload = payload
        self.qos = qos
        self.retain = retain
    }

    public init(topic: String, text: String, qos: Int32 = 1, retain: Bool = false) {
        self.init(topic: topic, payload: Array(text.utf8), qos: qos, retain: retain)
    }

    /// The payload as text, for tests and logs.
    public var text: String { String(decoding: payload, as: UTF8.self) }
}
