import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCatalog

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct MediaCatalogEventsTests {
    /// Every event of the history, oldest first.
    private func allEvents(_ catalog: MediaCatalog) async throws -> [CatalogEvent] {
        try await catalog.events(after: 0, limit: 10_000).events
    }

    @Test func eachChangeIsRecordedInOrderWithItsData() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let first = try await catalog.add(seed: 1, label: "door")
            _ = try await catalog.setKeep(id: first.id, keep: true)
            #expect(try await catalog.delete(id: first.id))
            #expect(try await catalog.delete(id: first.id) == false)
            #expect(try await catalog.setKeep(id: 99, keep: true) == nil)
            let events = try await allEvents(catalog)
            #expect(events.map(\.type) == [.pictureCreated, .pictureUpdated, .pictureDeleted])
            #expect(events.map(\.id) == [1, 2, 3])
            #expect(events[0].data == first.json)
            #expect(events[1].data.contains(#""keep":true"#))
            // taken_at names the picture's S3 object after its row is gone.
            let takenAt = Timestamp.iso8601(millisecondsSince1970: first.takenAt)
            #expect(events[2].data == #"{"id":1,"reason":"request","taken_at":"\#(takenAt)"}"#)
            #expect(await catalog.latestEventID() == 3)
        }
    }

    @Test func subscribersGetEachCommittedBatchAfterTheCommit() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let received = LockedValue<[[Int64]]>([])
            let subscription = catalog.eventFeed.subscribe { batch in
                received.withLock { $0.append(batch.map(\.id)) }
            }
            try await catalog.add(seed: 1)
            try await catalog.add(seed: 2)
            await catalog.setRetention(RetentionPolicy(maxPictures: 0, minimumAgeMilliseconds: 0))
            // The third add is stored, then retention removes all three in one transaction.
            try await catalog.add(seed: 3)
            #expect(received.withLock { $0 } == [[1], [2], [3], [4, 5, 6]])
            let deleted = try await catalog.events(after: 3, limit: 10).events
            #expect(
                deleted.map(\.data)
                    == (1...3).map {
                        let takenAt = Timestamp.iso8601(millisecondsSince1970: 1_700_000_000_000 + Int64($0))
                        return #"{"id":\#($0),"reason":"retention","taken_at":"\#(takenAt)"}"#
                    })
            subscription.cancel()
            try await catalog.add(seed: 4)
            #expect(received.withLock { $0.count } == 4)
        }
    }

    @Test func aFailedAddRecordsNoEvent() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            await #expect(throws: CatalogError.self) {
                try await catalog.add(jpeg: [], takenAt: 1, width: 1, height: 1, source: "x")
            }
            #expect(try await allEvents(catalog).isEmpty)
            #expect(await catalog.latestEventID() == 0)
        }
    }

    @Test func jobEventsSayCreatedUpdatedAndEndedOnce() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let job = try await catalog.createJob(
                specJSON: #"{"kind":"interval"}"#, label: "yard", state: "running", createdAt: 1000,
                startedAt: 1000)
            try await catalog.updateJob(
                id: job.id, state: "running", taken: 1, missed: 0, lastFailure: nil, lastFailureKind: nil,
                finishedAt: nil)
            // The same progress again (a resumed job rewriting its row) is not an event.
            try await catalog.updateJob(
                id: job.id, state: "running", taken: 1, missed: 0, lastFailure: nil, lastFailureKind: nil,
                finishedAt: nil)
            try await catalog.updateJob(
                id: job.id, state: "done", taken: 2, missed: 0, lastFailure: nil, lastFailureKind: nil,
                finishedAt: 5000)
            #expect(
                try await catalog.updateJob(
                    id: 77, state: "done", taken: 0, missed: 0, lastFailure: nil, lastFailureKind: nil,
                    finishedAt: 1) == false)
            let events = try await allEvents(catalog)
            #expect(events.map(\.type) == [.jobCreated, .jobUpdated, .jobEnded])
            #expect(
                events[0].data.hasPrefix(
                    #"{"id":1,"spec":{"kind":"interval"},"label":"yard","state":"running""#))
            #expect(events[2].data.contains(#""state":"done","taken":2"#))
            #expect(events[2].data.contains(#""finished_at":"1970-01-01T00:00:05.000Z""#))
        }
    }

    @Test func filtersByTypeAndPagesByCursor() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            for seed in 1...5 { try await catalog.add(seed: seed) }
            _ = try await catalog.delete(id: 2)
            let page = try await catalog.events(after: 2, limit: 2)
            #expect(page.events.map(\.id) == [3, 4])
            #expect(page.missedSome == false)
            #expect(page.latestID == 6)
            let deletes = try await catalog.events(after: 0, limit: 10, types: [.pictureDeleted])
            #expect(deletes.events.map(\.id) == [6])
            #expect(try await catalog.events(after: 0, limit: 10, types: []).events.isEmpty)
            await #expect(throws: CatalogError.self) { try await catalog.events(after: 0, limit: 0) }
        }
    }

    @Test func idsSurviveARestartAndACursorFromElsewhereIsMissed() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...3 { try await catalog.add(seed: seed) }
            }
            let reopened = try MediaCatalog.open(directory)
            #expect(await reopened.latestEventID() == 3)
            let next = try await reopened.add(seed: 4)
            #expect(try await reopened.events(after: 3, limit: 10).events.map(\.data) == [next.json])
            // Last-Event-ID 500 was never handed out here: the client's history is another one.
            #expect(try await reopened.events(after: 500, limit: 10).missedSome)
        }
    }

    @Test func countLimitPrunesTheOldestAndReadersBehindAreTold() async throws {
        try await withTemporaryDirectory { directory in
            var state = (count: 0, latestID: Int64(0), prunedThrough: Int64(0))
            do {
                let catalog = try MediaCatalog(
                    dataDirectory: directory, logger: quietLogger,
                    eventHistoryLimits: EventHistoryLimits(maxEvents: 64, maxAgeMilliseconds: nil))
                for seed in 1...200 { try await catalog.add(seed: seed) }
                state = await catalog.eventHistoryState()
                // Pruned in steps (slack of 1/64 of the limit), never below the limit.
                #expect(state.count >= 64 && state.count <= 65)
                #expect(state.latestID == 200)
                let behind = try await catalog.events(after: 10, limit: 5)
                #expect(behind.missedSome)
                #expect(behind.events.first?.id == state.prunedThrough + 1)
                let current = try await catalog.events(after: 190, limit: 5)
                #expect(current.missedSome == false)
                #expect(catalog.counters.eventsPrunedFromHistory == UInt64(200 - state.count))
            }
            // What was pruned stays pruned across a restart, and ids go on from 200.
            let reopened = try MediaCatalog.open(directory)
            #expect(await reopened.eventHistoryState().prunedThrough == state.prunedThrough)
            #expect(try await reopened.add(seed: 201).id == 201)
            #expect(await reopened.latestEventID() == 201)
        }
    }

    @Test func everyEventPrunedStillRemembersTheLatestID() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            do {
                let catalog = try MediaCatalog(
                    dataDirectory: directory, logger: quietLogger,
                    eventHistoryLimits: EventHistoryLimits(maxEvents: 100, maxAgeMilliseconds: 60_000),
                    clock: clock)
                for seed in 1...3 { try await catalog.add(seed: seed) }
                clock.advance(by: 120_000_000_000)
                await catalog.setEventHistoryLimits(
                    EventHistoryLimits(maxEvents: 100, maxAgeMilliseconds: 60_000))
                #expect(await catalog.eventHistoryState().count == 0)
            }
            let reopened = try MediaCatalog(
                dataDirectory: directory, logger: quietLogger, clock: clock)
            let state = await reopened.eventHistoryState()
            #expect(state.latestID == 3 && state.prunedThrough == 3 && state.count == 0)
            #expect(try await reopened.events(after: 1, limit: 10).missedSome)
            #expect(try await reopened.events(after: 3, limit: 10).missedSome == false)
        }
    }

    @Test func ageLimitPrunesAtMostOnceAMinute() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try MediaCatalog(
                dataDirectory: directory, logger: quietLogger,
                eventHistoryLimits: EventHistoryLimits(maxEvents: 1000, maxAgeMilliseconds: 10_000),
                clock: clock)
            try await catalog.add(seed: 1)
            clock.advance(by: 20_000_000_000)
            // Within the minute since the first check: the old event stays for now.
            try await catalog.add(seed: 2)
            #expect(await catalog.eventHistoryState().count == 2)
            clock.advance(by: 60_000_000_000)
            try await catalog.add(seed: 3)
            #expect(try await allEvents(catalog).map(\.id) == [3])
        }
    }

    @Test func aRowWithoutItsFileAtOpenIsAnnouncedAsDeleted() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...3 { try await catalog.add(seed: seed) }
                unlink(catalog.mediaPath(id: 2))
            }
            let reopened = try MediaCatalog.open(directory)
            let last = try await reopened.events(after: 3, limit: 10).events
            #expect(last.map(\.type) == [.pictureDeleted])
            let takenAt = Timestamp.iso8601(millisecondsSince1970: 1_700_000_000_002)
            #expect(last.first?.data == #"{"id":2,"reason":"missing_file","taken_at":"\#(takenAt)"}"#)
        }
    }

    @Test func sinkCursorsOnlyMoveForward() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                #expect(try await catalog.sinkCursor("mqtt") == nil)
                try await catalog.setSinkCursor("mqtt", to: 5)
                try await catalog.setSinkCursor("mqtt", to: 3)
                try await catalog.setSinkCursor("s3", to: 1)
                #expect(try await catalog.sinkCursor("mqtt") == 5)
                #expect(try await catalog.sinkCursor("s3") == 1)
            }
            let reopened = try MediaCatalog.open(directory)
            #expect(try await reopened.sinkCursor("mqtt") == 5)
        }
    }

    @Test func aVersion4DatabaseGainsAnEmptyEventHistory() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...3 { try await catalog.add(seed: seed) }
            }
            do {
                let database = try Database(path: "\(directory)/catalog.sqlite")
                try database.execute(
                    sql: """
                        DROP TABLE events; DROP TABLE sink_cursors;
                        ALTER TABLE media DROP COLUMN uploaded; ALTER TABLE media DROP COLUMN offloaded;
                        """)
                try database.setUserVersion(4)
            }
            let catalog = try MediaCatalog.open(directory)
            #expect(await catalog.latestEventID() == 0)
            #expect(try await catalog.add(seed: 4).id == 4)
            #expect(try await allEvents(catalog).map(\.id) == [1])
        }
    }
}
