import FoundationEssentials
import ShutterCatalog
import Testing

@Suite struct MediaRecordJSONTests {
    @Test func aRecordIsWrittenAsTheAPIDocumentsIt() {
        let record = MediaRecord(
            id: 42, takenAt: 1_796_019_205_054, width: 1280, height: 720, bytes: 204_800,
            sha256: String(repeating: "ab", count: 32), source: "test-pattern", jobID: 7, keep: true,
            label: "front door", uploaded: true)
        #expect(
            record.json
                == #"{"id":42,"taken_at":"2026-11-30T06:13:25.054Z","width":1280,"height":720,"bytes":204800,"#
                + #""sha256":"\#(String(repeating: "ab", count: 32))","source":"test-pattern","job_id":7,"#
                + #""keep":true,"label":"front door","url":"/media/42.jpg","stored":["local","s3"]}"#)
    }

    @Test func absentJobAndLabelAreNullAndAnOffloadedPictureIsOnlyInTheStore() {
        let record = MediaRecord(
            id: 1, takenAt: 0, width: 1, height: 1, bytes: 0, sha256: "", source: "cam", offloaded: true)
        #expect(
            record.json
                == #"{"id":1,"taken_at":"1970-01-01T00:00:00.000Z","width":1,"height":1,"bytes":0,"sha256":"","#
                + #""source":"cam","job_id":null,"keep":false,"label":null,"url":"/media/1.jpg","stored":["s3"]}"#
        )
    }

    /// A label is a client's text: whatever it holds, the record stays one JSON object that reads
    /// back to the same label, and `appendJSON` writes the bytes of `json`.
    @Test func anyLabelReadsBack() throws {
        for label in ["quote \" and \\ backslash", "line\nbreak\u{01}\u{7F}", "玄関 😀", ""] {
            let record = MediaRecord(
                id: 9, takenAt: -1, width: 2, height: 2, bytes: 3, sha256: "00", source: "s\"rc", label: label
            )
            var bytes: [UInt8] = [UInt8(ascii: "[")]
            record.appendJSON(to: &bytes)
            bytes.append(UInt8(ascii: "]"))
            #expect(bytes == Array("[\(record.json)]".utf8))
            let decoded = try JSONDecoder().decode([Decoded].self, from: Data(bytes))
            #expect(decoded == [Decoded(label: label, source: "s\"rc", takenAt: "1969-12-31T23:59:59.999Z")])
        }
    }

    private struct Decoded: Decodable, Equatable {
        let label: String
        let source: String
        let takenAt: String

        enum CodingKeys: String, CodingKey {
            case label, source
            case takenAt = "taken_at"
        }
    }
}
