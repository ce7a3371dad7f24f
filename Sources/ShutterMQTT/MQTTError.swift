import CMosquitto
import ShutterOutbox

/// Why a publish was not acknowledged, keeping libmosquitto's code where it gave one.
public enum MQTTError: Error, Equatable, CustomStringConvertible {
    /// A libmosquitto call failed: the call and its `MOSQ_ERR_*` code.
    case library(call: String, code: Int32)
    /// Not connected to the broker now: the event waits for the next connection.
    case notConnected
    /// The connection ended before the broker acknowledged.
    case connectionLost
    /// No PUBACK within the timeout: a dead peer the keep-alive has not noticed yet.
    case acknowledgementTimedOut(milliseconds: UInt64)
    /// Too many publishes still unacknowledged (timed out ones included); refused until they are.
    case tooManyUnacknowledged(Int)
    /// The sink is stopping.
    case stopped

    public var description: String {
        switch self {
        case .library(let call, let code):
            "\(call): \(String(cString: mosquitto_strerror(code))) (MOSQ_ERR \(code))"
        case .notConnected: "not connected to the MQTT broker"
        case .connectionLost: "the connection to the MQTT broker was lost before it acknowledged"
        case .acknowledgementTimedOut(let milliseconds):
            "the MQTT broker did not acknowledge within \(milliseconds) ms"
        case .tooManyUnacknowledged(let count):
            "\(count) publishes are still unacknowledged by the MQTT broker"
        case .stopped: "the MQTT sink is stopping"
        }
    }
}

extension MQTTError: OutboxDestinationWaitError {
    /// `notConnected` comes after `connectionWaitNanoseconds` of waiting for the client's own
    /// reconnect (or, raced by a disconnect, right before the next attempt waits for it).
    public var waitedForDestination: Bool { self == .notConnected }
}
