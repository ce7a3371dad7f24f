import FoundationEssentials
import ShutterCatalog
import ShutterMQTT
import Testing

@Suite struct MQTTEventMessagesTests {
    private let messages = MQTTEventMessages(topics: try! MQTTTopics(prefix: "shutterd/cam"))
    private let record = #"{"id":7,"taken_at":"2026-12-02T04:10:00.000Z","sha256":"ab"}"#

    @Test func aPictureGoesOutAsItsJPEGThenItsRecordThenTheState() throws {
        let event = CatalogEvent(id: 42, type: .pictureCreated, at: 1_796_000_000_000, data: record)
        let publications = messages.publications(
            for: event,
            context: .init(
                jpeg: [0xFF, 0xD8, 0xFF, 0xD9],
                library: MQTTLibraryState(pictures: 3, lastPictureAt: "2026-12-02T04:10:00.000Z")))
        #expect(
            publications.map(\.topic) == [
                "shutterd/cam/picture/jpeg", "shutterd/cam/picture", "shutterd/cam/state",
            ])
        #expect(publications.map(\.retain) == [true, false, true])
        #expect(publications.allSatisfy { $0.qos == 1 })
        #expect(publications[0].payload == [0xFF, 0xD8, 0xFF, 0xD9])
        let fields = try JSONDecoder().decode([String: JSONAny].self, from: Data(publications[1].payload))
        #expect(fields["event_id"] == .number(42) && fields["event"] == .string("picture.created"))
        #expect(fields["id"] == .number(7) && fields["sha256"] == .string("ab"))
        #expect(publications[2].text == #"{"pictures":3,"last_picture_at":"2026-12-02T04:10:00.000Z"}"#)
    }

    @Test func withoutTheJPEGOnlyTheRecord() {
        let event = CatalogEvent(id: 1, type: .pictureUpdated, at: 0, data: record)
        #expect(messages.publications(for: event).map(\.topic) == ["shutterd/cam/picture"])
    }

    @Test func deletionsJobsAndTheCameraHaveTopicsOfTheirOwn() {
        let deleted = CatalogEvent(
            id: 2, type: .pictureDeleted, at: 0, data: #"{"id":7,"reason":"retention"}"#)
        #expect(messages.publications(for: deleted).map(\.topic) == ["shutterd/cam/picture/deleted"])
        let job = CatalogEvent(id: 3, type: .jobEnded, at: 0, data: #"{"id":1,"state":"cancelled"}"#)
        let jobPublications = messages.publications(for: job, context: .init(intervalJobRunning: false))
        #expect(jobPublications.map(\.topic) == ["shutterd/cam/job", "shutterd/cam/job/state"])
        #expect(jobPublications[1].text == "OFF" && jobPublications[1].retain)
        let camera = CatalogEvent(
            id: 4, type: .cameraState, at: 0, data: #"{"state":"gone","reason":"unplugged"}"#)
        let cameraPublication = messages.publications(for: camera)
        #expect(cameraPublication.map(\.topic) == ["shutterd/cam/camera"] && cameraPublication[0].retain)
        #expect(cameraPublication[0].text.hasPrefix(#"{"event_id":4,"event":"camera.state","#))
        #expect(cameraPublication[0].text.hasSuffix(#","state":"gone","reason":"unplugged"}"#))
    }

    @Test func anEmptyObjectGetsOnlyTheEventFields() {
        let event = CatalogEvent(id: 5, type: .storageState, at: 0, data: "{}")
        #expect(
            MQTTEventMessages.message(event)
                == #"{"event_id":5,"event":"storage.state","at":"1970-01-01T00:00:00.000Z"}"#)
        #expect(messages.publications(for: event).isEmpty)
    }
}
