import ShutterTestSupport
import Testing

@testable import ShutterCatalog

@Suite struct MediaCatalogJobsTests {
    @Test func createUpdateAndReadJobs() async throws {
        try await withTemporaryDirectory { directory in
            let catalog = try MediaCatalog.open(directory)
            let first = try await catalog.createJob(
                specJSON: #"{"a":1}"#, label: "garden", state: "scheduled", createdAt: 1000, startedAt: 2000)
            let second = try await catalog.createJob(
                specJSON: #"{"b":2}"#, label: nil, state: "scheduled", createdAt: 1100, startedAt: 1100)
            #expect(first.id == 1 && second.id == 2)
            #expect(try await catalog.job(id: 1) == first)
            #expect(try await catalog.job(id: 3) == nil)
            #expect(try await catalog.jobs(limit: 10).map(\.id) == [2, 1])
            #expect(try await catalog.jobs(limit: 1).map(\.id) == [2])

            #expect(
                try await catalog.updateJob(
                    id: 1, state: "running", taken: 3, missed: 1, lastFailure: "storage full",
                    lastFailureKind: "storage_full", finishedAt: nil))
            #expect(
                try await catalog.updateJob(
                    id: 2, state: "done", taken: 1, missed: 0, lastFailure: nil, lastFailureKind: nil,
                    finishedAt: 5000))
            // The end time is set once: a later update cannot move it.
            try await catalog.updateJob(
                id: 2, state: "done", taken: 1, missed: 0, lastFailure: nil, lastFailureKind: nil,
                finishedAt: 6000)
            #expect(
                try await !catalog.updateJob(
                    id: 9, state: "done", taken: 0, missed: 0, lastFailure: nil, lastFailureKind: nil,
                    finishedAt: 1))

            let running = try #require(try await catalog.job(id: 1))
            #expect(running.state == "running" && running.taken == 3 && running.missed == 1)
            #expect(running.lastFailure == "storage full" && running.finishedAt == nil)
            #expect(running.lastFailureKind == "storage_full")
            #expect(try await catalog.job(id: 2)?.lastFailureKind == nil)
            #expect(try await catalog.job(id: 2)?.finishedAt == 5000)
            #expect(try await catalog.unfinishedJobs().map(\.id) == [1])
        }
    }

    @Test func aVersion1DatabaseMigratesKeepingItsPictures() async throws {
        try await withTemporaryDirectory { directory in
            var added: [MediaRecord] = []
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...3 {
                    added.append(try await catalog.add(seed: seed, jobID: seed == 2 ? 7 : nil))
                }
            }
            // Turn the file back into what version 1 wrote.
            do {
                let database = try Database(path: "\(directory)/catalog.sqlite")
                try database.execute(
                    sql: """
                        DROP TABLE events; DROP TABLE sink_cursors;
                        ALTER TABLE media DROP COLUMN uploaded; ALTER TABLE media DROP COLUMN offloaded;
                        DROP TABLE jobs; DROP INDEX media_label; ALTER TABLE media DROP COLUMN label
                        """)
                try database.setUserVersion(1)
            }
            let catalog = try MediaCatalog.open(directory)
            #expect(catalog.reconciliation.isClean)
            #expect(try await catalog.page(after: 0, limit: 10).items == added)
            #expect(try await catalog.page(limit: 10, jobID: 7).items.map(\.id) == [2])
            #expect(try await catalog.jobs(limit: 10).isEmpty)
            let job = try await catalog.createJob(
                specJSON: "{}", label: nil, state: "scheduled", createdAt: 1, startedAt: 1)
            #expect(job.id == 1)
        }
    }

    @Test func aVersion2DatabaseMigratesKeepingItsJobs() async throws {
        try await withTemporaryDirectory { directory in
            do {
                let catalog = try MediaCatalog.open(directory)
                _ = try await catalog.createJob(
                    specJSON: "{}", label: "old", state: "running", createdAt: 1, startedAt: 1)
                try await catalog.updateJob(
                    id: 1, state: "running", taken: 2, missed: 1, lastFailure: "camera gone",
                    lastFailureKind: nil, finishedAt: nil)
            }
            // Turn the file back into what version 2 wrote.
            do {
                let database = try Database(path: "\(directory)/catalog.sqlite")
                try database.execute(
                    sql: """
                        DROP TABLE events; DROP TABLE sink_cursors;
                        ALTER TABLE media DROP COLUMN uploaded; ALTER TABLE media DROP COLUMN offloaded;
                        ALTER TABLE jobs DROP COLUMN last_failure_kind;
                        DROP INDEX media_label;
                        ALTER TABLE media DROP COLUMN label;
                        """)
                try database.setUserVersion(2)
            }
            let catalog = try MediaCatalog.open(directory)
            let job = try #require(try await catalog.job(id: 1))
            #expect(job.label == "old" && job.taken == 2 && job.missed == 1)
            #expect(job.lastFailure == "camera gone" && job.lastFailureKind == nil)
            try await catalog.updateJob(
                id: 1, state: "running", taken: 2, missed: 2, lastFailure: "camera gone",
                lastFailureKind: "camera_unavailable", finishedAt: nil)
            #expect(try await catalog.job(id: 1)?.lastFailureKind == "camera_unavailable")
        }
    }

    @Test func aVersion3DatabaseMigratesItsPicturesWithoutLabels() async throws {
        try await withTemporaryDirectory { directory in
            var added: [MediaRecord] = []
            do {
                let catalog = try MediaCatalog.open(directory)
                for seed in 1...3 { added.append(try await catalog.add(seed: seed)) }
            }
            // Turn the file back into what version 3 wrote.
            do {
                let database = try Database(path: "\(directory)/catalog.sqlite")
                try database.execute(
                    sql: """
                        DROP TABLE events; DROP TABLE sink_cursors; DROP INDEX media_label;
                        ALTER TABLE media DROP COLUMN label;
                        ALTER TABLE media DROP COLUMN uploaded; ALTER TABLE media DROP COLUMN offloaded;
                        """
                )
                try database.setUserVersion(3)
            }
            // (Version 4 to 5 adds the event history: aVersion4DatabaseGainsAnEmptyEventHistory.)
            let catalog = try MediaCatalog.open(directory)
            #expect(catalog.reconciliation.isClean)
            #expect(try await catalog.page(after: 0, limit: 10).items == added)
            #expect(added.allSatisfy { $0.label == nil })
            let labelled = try await catalog.add(seed: 4, label: "front door")
            #expect(try await catalog.record(id: labelled.id)?.label == "front door")
            #expect(try await catalog.page(limit: 10, label: "front door").items.map(\.id) == [4])
        }
    }
}
