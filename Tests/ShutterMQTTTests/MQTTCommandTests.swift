import ShutterMQTT
import ShutterSystem
import ShutterTestSupport
import Testing

private let topics = try! MQTTTopics(prefix: "shutterd/cam")
private let quietLogger = Logger(label: "shutter.mqtt.test", level: .error)

private func parse(_ topic: String, _ payload: String) throws(MQTTCommandError) -> MQTTCommand {
    try MQTTCommand.parse(topic: topic, payload: Array(payload.utf8), topics: topics, defaultEverySeconds: 10)
}

@Suite struct MQTTCommandTests {
    @Test func snapTakesNothingOrItsOptions() throws {
        #expect(try parse(topics.snapCommand, "") == .snap(label: nil, delaySeconds: nil))
        #expect(try parse(topics.snapCommand, " {} ") == .snap(label: nil, delaySeconds: nil))
        #expect(
            try parse(topics.snapCommand, #"{"label": "door", "delay": 5}"#)
                == .snap(label: "door", delaySeconds: 5))
        #expect(
            try parse(topics.snapCommand, #"{"label": "", "delay": 0}"#)
                == .snap(label: nil, delaySeconds: nil))
    }

    @Test func jobTakesOnOffOrAnObject() throws {
        #expect(try parse(topics.jobCommand, "ON") == .startIntervalJob(everySeconds: 10))
        #expect(try parse(topics.jobCommand, "off") == .stopIntervalJob)
        #expect(
            try parse(topics.jobCommand, #"{"state": "ON", "every": 2.5}"#)
                == .startIntervalJob(everySeconds: 2.5))
        #expect(try parse(topics.jobCommand, #"{"state": "OFF"}"#) == .stopIntervalJob)
    }

    @Test(arguments: [
        ("snap/set", "not json"), ("snap/set", #"{"label": 5}"#), ("snap/set", #"{"delay": -1}"#),
        ("snap/set", #"{"delay": 99999}"#), ("job/set", "MAYBE"),
        ("job/set", #"{"state": "ON", "every": 0}"#),
        ("job/set", #"{"every": 5}"#), ("other", "{}"),
    ])
    func malformedCommandsAreRefused(_ topic: String, _ payload: String) {
        #expect(throws: MQTTCommandError.self) { try parse("shutterd/cam/" + topic, payload) }
    }

    @Test func oversizedPayloadsAndLabelsAreRefused() {
        let big = "{" + String(repeating: " ", count: MQTTCommand.maximumPayloadBytes) + "}"
        #expect(throws: MQTTCommandError("payload larger than 1024 bytes")) {
            try parse(topics.snapCommand, big)
        }
        let label = String(repeating: "x", count: 201)
        #expect(throws: MQTTCommandError.self) { try parse(topics.snapCommand, #"{"label": "\#(label)"}"#) }
    }

    @Test func theGateAdmitsOneOfEachKindAtATime() {
        var gate = MQTTCommandGate()
        let admitted = [gate.admit(.snap), gate.admit(.job), gate.admit(.snap), gate.admit(.snap)]
        #expect(admitted == [true, true, false, false])
        #expect(gate.refusedInRow == 2 && gate.refused == 2)
        gate.finish(.snap)
        let again = gate.admit(.snap)
        #expect(again)
        #expect(gate.refusedInRow == 0 && gate.refused == 2)
    }
}

@Suite struct MQTTCommandRunnerTests {
    @Test func aFloodOfSnapsRunsOneAtATime() async {
        let remote = FakeCameraRemote()
        remote.hold()
        let runner = MQTTCommandRunner(
            topics: topics, defaultEverySeconds: 10, remote: remote, logger: quietLogger)
        #expect(
            runner.handle(topic: topics.snapCommand, payload: Array("{}".utf8))
                == .started(.snap(label: nil, delaySeconds: nil)))
        await remote.waitForSnaps(1)
        for _ in 0..<100 {
            #expect(
                runner.handle(topic: topics.snapCommand, payload: [])
                    == .refused(.snap(label: nil, delaySeconds: nil)))
        }
        // A job change is of another kind: not held up by the snap.
        #expect(
            runner.handle(topic: topics.jobCommand, payload: Array("ON".utf8))
                == .started(.startIntervalJob(everySeconds: 10)))
        await runner.waitForLastCommand()
        #expect(remote.jobRunning && remote.jobStarts == [10])
        #expect(runner.refused == 100)
        remote.release()
        // Once the first snap is done, the next is admitted.
        while case .refused = runner.handle(topic: topics.snapCommand, payload: Array(#"{"label":"b"}"#.utf8))
        {
            await Task.yield()
        }
        await runner.waitForLastCommand()
        #expect(remote.snapLabels == [nil, "b"])
    }

    @Test func malformedCommandsReachNothing() async {
        let remote = FakeCameraRemote()
        let runner = MQTTCommandRunner(
            topics: topics, defaultEverySeconds: 10, remote: remote, logger: quietLogger)
        let oversized = [UInt8](repeating: UInt8(ascii: " "), count: 5000)
        guard case .ignored = runner.handle(topic: topics.snapCommand, payload: oversized) else {
            Issue.record("an oversized payload was not ignored")
            return
        }
        guard case .ignored = runner.handle(topic: topics.jobCommand, payload: Array("yes".utf8)) else {
            Issue.record("a malformed job command was not ignored")
            return
        }
        #expect(remote.snapLabels.isEmpty && remote.jobStarts.isEmpty)
    }
}
