import ShutterCatalog
import ShutterHTTP
import ShutterTestSupport
import Testing

@testable import ShutterAPI

/// Labels: given to `POST /snap` (body or query) or a job, stored with the picture, filtered by
/// `GET /library?label=`.
@Suite(.timeLimit(.minutes(1))) struct LabelTests {
    @Test func aDelayedSnapsLabelIsStoredWithItsPicture() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            try await api.jobs.start()
            let answer = Task {
                await api.respond(
                    .post, "/snap",
                    body: Array(#"{"delay": 1, "wait": true, "label": "front \"door\""}"#.utf8))
            }
            await api.clock.sleepers(atLeast: 1)
            api.clock.advance(by: 1_000_000_000)
            let response = await answer.value
            #expect(response.status == .created)
            #expect(response.text.contains(#""label":"front \"door\"""#))
            #expect(try await api.catalog.record(id: 1)?.label == #"front "door""#)
            await api.jobs.stop()
        }
    }

    @Test func theLibraryFiltersByLabelAndItsNextLinkKeepsTheFilter() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            for index in 1...5 {
                try await api.catalog.add(
                    jpeg: [0xFF, 0xD8, UInt8(index), 0xFF, 0xD9], takenAt: Int64(index), width: 8, height: 8,
                    source: "test", label: index == 3 ? nil : "a&b c")
            }
            let first = await api.respond(.get, "/library?label=a%26b+c&limit=2")
            #expect(first.status == .ok)
            #expect(first.text.contains(#""id":5"#) && first.text.contains(#""id":4"#))
            #expect(first.text.contains(#""next":"/library?before=4&label=a%26b%20c&limit=2""#))
            let second = await api.respond(.get, "/library?before=4&label=a%26b%20c&limit=2")
            #expect(second.text.contains(#""id":2"#) && second.text.contains(#""id":1"#))
            #expect(!second.text.contains(#""id":3"#))
            #expect(second.text.contains(#""next":null"#))
            let unlabelled = await api.respond(.get, "/library?after=2")
            #expect(unlabelled.text.contains(#""id":3,"#) && unlabelled.text.contains(#""label":null"#))
        }
    }

    @Test(arguments: [
        "/snap?label=a&delay=1", "/library?label=",
    ])
    func anEmptyOrRepeatedLabelIsAnsweredWithA400(target: String) async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let method: HTTPMethod = target.hasPrefix("/snap") ? .post : .get
            let body = target.hasPrefix("/snap") ? Array(#"{"label": "b"}"#.utf8) : []
            #expect(await api.respond(method, target, body: body).status == .badRequest)
        }
    }

    @Test func aLabelLongerThan200BytesIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let long = String(repeating: "x", count: 201)
            let response = await api.respond(.post, "/snap?label=\(long)")
            #expect(response.status == .badRequest)
            #expect(response.text.contains("at most 200 bytes"))
            #expect(await api.respond(.get, "/library?label=\(long)").status == .badRequest)
        }
    }
}
