import ShutterSystem

/// Carries out the commands that arrive from the broker: parses each, admits one of each kind
/// at a time (`MQTTCommandGate`), and runs it on the daemon through `CameraRemote` as a task.
///
/// Called on the MQTT network thread, it returns at once whatever the payload; a flood of
/// commands costs one parse each and runs at most one snap and one job change.
public final class MQTTCommandRunner: Sendable {
    /// What became of one message.
    public enum Disposition: Sendable, Equatable {
        /// Running, as this task.
        case started(MQTTCommand)
        /// Malformed, oversized or on an unknown topic.
        case ignored(MQTTCommandError)
        /// One of its kind is still running.
        case refused(MQTTCommand)
    }

    private let topics: MQTTTopics
    private let defaultEverySeconds: Double
    private let remote: any CameraRemote
    private let logger: Logger
    private let gate = LockedValue(MQTTCommandGate())
    /// The task of each command started, so tests can await it; only the newest is kept.
    private let lastTask = LockedValue<Task<Void, Never>?>(nil)

    public init(topics: MQTTTopics, defaultEverySeconds: Double, remote: any CameraRemote, logger: Logger) {
        self.topics = topics
        self.defaultEverySeconds = defaultEverySeconds
        self.remote = remote
        self.logger = logger
    }

    /// Commands refused because one of their kind was running.
    public var refused: UInt64 { gate.withLock { $0.refused } }

    /// Waits for the command started last.
    public func waitForLastCommand() async {
        await lastTask.withLock { $0 }?.value
    }

    @discardableResult
    public func handle(topic: String, payload: [UInt8]) -> Disposition {
        let command: MQTTCommand
        do {
            command = try MQTTCommand.parse(
                topic: topic, payload: payload, topics: topics, defaultEverySeconds: defaultEverySeconds)
        } catch {
            logger.warning(
                "ignored an MQTT command",
                ["topic": topic, "bytes": String(payload.count), "reason": "\(error)"])
            return .ignored(error)
        }
        let (admitted, refusedInRow) = gate.withLock { ($0.admit(command.kind), $0.refusedInRow) }
        guard admitted else {
            // Once per flood, not once per message.
            if refusedInRow == 1 {
                logger.warning("refused an MQTT command: one of its kind is still running", ["topic": topic])
            }
            return .refused(command)
        }
        let task = Task { [remote, gate, logger] in
            defer { gate.withLock { $0.finish(command.kind) } }
            do {
                switch command {
                case .snap(let label, let delay):
                    let id = try await remote.snap(label: label, delaySeconds: delay)
                    logger.info("snap from MQTT", ["picture_id": id.map { String($0) } ?? "delayed"])
                case .startIntervalJob(let every):
                    try await remote.startIntervalJob(everySeconds: every)
                    logger.info("interval job started from MQTT", ["every_s": String(every)])
                case .stopIntervalJob:
                    try await remote.stopIntervalJob()
                    logger.info("interval job stopped from MQTT")
                }
            } catch {
                logger.warning("an MQTT command failed", ["topic": topic, "error": "\(error)"])
            }
        }
        lastTask.withLock { $0 = task }
        return .started(command)
    }
}
