import ShutterCatalog
import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterAPI

/// The change feed over a real catalog: `/events` streams and long-polls fed by the one hub,
/// with the event loop and the clock played by hand.
@Suite struct EventHubTests {
    private func add(_ api: TestAPI, seed: UInt8) async throws -> MediaRecord {
        try await api.catalog.add(
            jpeg: [0xFF, 0xD8, seed, seed, 0xFF, 0xD9], takenAt: Int64(seed), width: 16, height: 16,
            source: "test")
    }

    /// The stream a `GET /events` answered with.
    private func stream(_ response: HTTPResponse) throws -> EventStream {
        guard case .stream(let body) = response.body, let stream = body as? EventStream else {
            throw HTTPError(
                .internalServerError, detail: "not an event stream: \(response.status.code) \(response.text)")
        }
        return stream
    }

    /// `GET /events` answered on the loop, as the server runs `.immediate` handlers.
    private func open(_ api: TestAPI, _ target: String = "/events", headers: HTTPHeaders = [:])
        -> HTTPResponse
    {
        let request = HTTPRequest(method: .get, target: target, headers: headers, body: [])
        guard
            case .handler(let handler, let parameters, _, _) = api.router.resolve(
                method: .get, path: request.path ?? ""),
            case .immediate(let run) = handler
        else { return HTTPResponse(status: .notFound) }
        return api.loop.runOnQueue {
            do {
                return try run(request, parameters)
            } catch let error as any HTTPResponseError {
                return error.response()
            } catch {
                return HTTPResponse(status: .internalServerError)
            }
        }
    }

    private func isWaiting(_ output: HTTPStreamOutput) -> Bool {
        if case .waiting = output { return true }
        return false
    }

    private func text(_ output: HTTPStreamOutput) -> String {
        guard case .chunks(let chunks) = output else { return "" }
        return chunks.map { String(decoding: $0, as: UTF8.self) }.joined()
    }

    private func started(_ directory: String) async throws -> TestAPI {
        let api = try TestAPI(directory: directory)
        await api.events.start()
        api.loop.runPending()
        return api
    }

    @Test func oneSubscriptionToTheCatalogFeedsEveryStreamOnTheLoop() async throws {
        try await withTemporaryDirectory { directory in
            let api = try await started(directory)
            let streams = [try stream(open(api)), try stream(open(api)), try stream(open(api))]
            #expect(api.catalog.eventFeed.subscriberCount == 1)
            for stream in streams {
                #expect(text(api.loop.runOnQueue { stream.nextOutput() }) == "retry: 1000\n\n")
            }
            let record = try await add(api, seed: 1)
            // Nothing reaches a stream before the loop runs the hand-over.
            await api.loop.tasks(atLeast: 1)
            for stream in streams { #expect(isWaiting(api.loop.runOnQueue { stream.nextOutput() })) }
            api.loop.runPending()
            for stream in streams {
                let sent = text(api.loop.runOnQueue { stream.nextOutput() })
                #expect(sent == "id: 1\nevent: picture.created\ndata: \(record.json)\n\n")
            }
        }
    }

    @Test func aStreamWithLastEventIDReplaysTheHistoryThenGoesLive() async throws {
        try await withTemporaryDirectory { directory in
            let api = try await started(directory)
            for seed in 1...3 { _ = try await add(api, seed: UInt8(seed)) }
            api.loop.runPending()
            let stream = try stream(open(api, headers: ["Last-Event-ID": "1"]))
            _ = api.loop.runOnQueue { stream.nextOutput() }
            // The first pull asks the catalog; the page comes back through the loop.
            #expect(isWaiting(api.loop.runOnQueue { stream.nextOutput() }))
            await api.loop.tasks(atLeast: 1)
            api.loop.runPending()
            let replayed = text(api.loop.runOnQueue { stream.nextOutput() })
            #expect(replayed.hasPrefix("id: 2\nevent: picture.created\n"))
            #expect(replayed.contains("id: 3\nevent: picture.created\n"))
            _ = try await add(api, seed: 4)
            await api.loop.tasks(atLeast: 1)
            api.loop.runPending()
            #expect(text(api.loop.runOnQueue { stream.nextOutput() }).hasPrefix("id: 4\n"))
        }
    }

    @Test func anUnknownTypeOrACursorThatIsNoNumberIsRefusedNamingIt() async throws {
        try await withTemporaryDirectory { directory in
            let api = try await started(directory)
            let unknown = open(api, "/events?types=picture.created,picture.eaten")
            #expect(unknown.status == .badRequest)
            #expect(unknown.text.contains("picture.eaten"))
            let cursor = open(api, headers: ["Last-Event-ID": "abc"])
            #expect(cursor.status == .badRequest)
            let query = open(api, "/events?last_event_id=-1")
            #expect(query.status == .badRequest)
        }
    }

    @Test func streamsBeyondTheLimitAreAnswered503UntilOneEnds() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let hub = EventHub(
                catalog: api.catalog, queue: api.loop, settings: .init(maxEventStreams: 2), clock: api.clock,
                logger: TestAPI.quiet)
            try api.loop.runOnQueue {
                let first = try hub.openStream(after: nil, types: nil)
                let second = try hub.openStream(after: nil, types: nil)
                #expect(throws: ChangeFeedError.tooManyEventStreams(limit: 2)) {
                    try hub.openStream(after: nil, types: nil)
                }
                first.stop()
                let third = try hub.openStream(after: nil, types: nil)
                #expect(hub.streamCount == 2)
                withExtendedLifetime((second, third)) {}
            }
            #expect(ChangeFeedError.tooManyEventStreams(limit: 2).status == .serviceUnavailable)
        }
    }

    @Test func theTickSendsAKeepAliveOnlyOnceTheIntervalHasPassed() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let hub = EventHub(
                catalog: api.catalog, queue: api.loop, settings: .init(keepAliveMilliseconds: 15_000),
                clock: api.clock, logger: TestAPI.quiet)
            let stream = try api.loop.runOnQueue { try hub.openStream(after: nil, types: nil) }
            _ = api.loop.runOnQueue { stream.nextOutput() }
            api.clock.advance(by: 14_000_000_000)
            api.loop.runOnQueue { hub.tick() }
            #expect(isWaiting(api.loop.runOnQueue { stream.nextOutput() }))
            api.clock.advance(by: 1_000_000_000)
            #expect(text(api.loop.runOnQueue { stream.nextOutput() }) == ": keep-alive\n\n")
        }
    }

    @Test func aLongPollAnswersAsSoonAsAPictureArrives() async throws {
        try await withTemporaryDirectory { directory in
            let api = try await started(directory)
            let first = try await add(api, seed: 1)
            api.loop.runPending()
            let answer = Task { await api.respond(.get, "/library?after=\(first.id)&wait=30") }
            // Waiting: its timeout is asleep on the clock.
            await api.clock.sleepers(atLeast: 1)
            #expect(api.events.waiters.count == 1)
            let second = try await add(api, seed: 2)
            await api.loop.tasks(atLeast: 1)
            api.loop.runPending()
            let response = await answer.value
            #expect(response.status == .ok)
            #expect(response.text.contains("\"id\":\(second.id)"))
            #expect(api.events.waiters.count == 0)
        }
    }

    @Test func aLongPollWithNothingNewAnswersAnEmptyPageWhenItsWaitEnds() async throws {
        try await withTemporaryDirectory { directory in
            let api = try await started(directory)
            let answer = Task { await api.respond(.get, "/library?after=0&wait=30") }
            await api.clock.sleepers(atLeast: 1)
            api.clock.advance(by: 29_000_000_000)
            // A job's event is not a picture: still waiting.
            api.events.waiters.wake([CatalogEvent(id: 9, type: .jobUpdated, at: 0, data: "{\"id\":1}")])
            api.clock.advance(by: 1_000_000_000)
            let response = await answer.value
            #expect(response.status == .ok)
            #expect(response.text.hasPrefix("{\"items\":[],\"next\":null}"))
        }
    }

    @Test func waitIsBoundedAndNeedsAnAfterCursor() async throws {
        try await withTemporaryDirectory { directory in
            let api = try await started(directory)
            #expect(await api.respond(.get, "/library?after=0&wait=301").status == .badRequest)
            #expect(await api.respond(.get, "/library?wait=5").status == .badRequest)
            #expect(await api.respond(.get, "/jobs/1?wait=5&state_not=sleeping").status == .badRequest)
            #expect(await api.respond(.get, "/jobs/1?wait=301").status == .badRequest)
        }
    }

    @Test func waitersBeyondTheLimitAreRefused() throws {
        let waiters = ChangeWaiters(limit: 1)
        let ticket = try waiters.register(for: [.pictureCreated])
        #expect(throws: ChangeFeedError.tooManyWaiters(limit: 1)) {
            try waiters.register(for: [.pictureCreated])
        }
        ticket.finish()
        _ = try waiters.register(for: [.pictureCreated])
    }

    @Test func aWakeBetweenTheLookAndTheWaitIsNotLostAndOtherTypesDoNotWake() async throws {
        let waiters = ChangeWaiters(limit: 4)
        let clock = ManualClock()
        let ticket = try waiters.register(for: [.pictureCreated])
        defer { ticket.finish() }
        // The picture is committed after the waiter looked and before it waits.
        waiters.wake([CatalogEvent(id: 1, type: .pictureCreated, at: 0, data: "{}")])
        #expect(await ticket.wait(until: clock.monotonicNow().advanced(by: 1_000_000_000), clock: clock))
        ticket.rearm()
        waiters.wake([
            CatalogEvent(id: 2, type: .jobEnded, at: 0, data: "{}"),
            CatalogEvent(id: 3, type: .pictureDeleted, at: 0, data: "{}"),
        ])
        let deadline = clock.monotonicNow().advanced(by: 1_000_000_000)
        let waited = Task { await ticket.wait(until: deadline, clock: clock) }
        await clock.sleepers(atLeast: 1)
        clock.advance(by: 1_000_000_000)
        #expect(await waited.value == false)
    }

    @Test func aJobWaiterWakesOnlyForItsOwnJobsEvents() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            let spec = "{\"kind\":\"burst\",\"count\":2}"
            let job = try await api.catalog.createJob(
                specJSON: spec, label: nil, state: "scheduled", createdAt: 0, startedAt: 0)
            let other = try await api.catalog.createJob(
                specJSON: spec, label: nil, state: "scheduled", createdAt: 0, startedAt: 0)
            let page = try await api.catalog.events(after: 0, limit: 10)
            // The row as job.* events carry it starts with the id, which the filter relies on.
            #expect(page.events.map { JobRoutes.isEvent($0, ofJob: job.id) } == [true, false])
            #expect(page.events.map { JobRoutes.isEvent($0, ofJob: other.id) } == [false, true])
            let waiters = ChangeWaiters(limit: 1)
            let ticket = try waiters.register(for: [.jobCreated]) { JobRoutes.isEvent($0, ofJob: job.id) }
            defer { ticket.finish() }
            let now = api.clock.monotonicNow()
            waiters.wake([page.events[1]])
            #expect(await ticket.wait(until: now, clock: api.clock) == false)
            waiters.wake(page.events)
            #expect(await ticket.wait(until: now, clock: api.clock))
        }
    }

    @Test func theLastEventIDHeaderWinsOverTheQueryAsAReconnectingEventSourceSendsBoth() async throws {
        try await withTemporaryDirectory { directory in
            let api = try await started(directory)
            for seed in 1...3 { _ = try await add(api, seed: UInt8(seed)) }
            api.loop.runPending()
            let reconnected = try stream(
                open(api, "/events?last_event_id=0", headers: ["Last-Event-ID": "2"]))
            _ = api.loop.runOnQueue { reconnected.nextOutput() }
            _ = api.loop.runOnQueue { reconnected.nextOutput() }
            await api.loop.tasks(atLeast: 1)
            api.loop.runPending()
            let replayed = text(api.loop.runOnQueue { reconnected.nextOutput() })
            #expect(replayed.hasPrefix("id: 3\n"))
            #expect(!replayed.contains("id: 1\n") && !replayed.contains("id: 2\n"))
            // An empty header is EventSource's "no id yet": the query's cursor applies.
            let fromQuery = try stream(open(api, "/events?last_event_id=2", headers: ["Last-Event-ID": ""]))
            _ = api.loop.runOnQueue { fromQuery.nextOutput() }
            _ = api.loop.runOnQueue { fromQuery.nextOutput() }
            await api.loop.tasks(atLeast: 1)
            api.loop.runPending()
            #expect(text(api.loop.runOnQueue { fromQuery.nextOutput() }).hasPrefix("id: 3\n"))
        }
    }

    @Test func closingTheWaitersAnswersEveryLongPollAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let api = try await started(directory)
            let answer = Task { await api.respond(.get, "/library?after=0&wait=300") }
            await api.clock.sleepers(atLeast: 1)
            api.events.endWaits()
            let response = await answer.value
            #expect(response.status == .ok)
            #expect(response.text.hasPrefix("{\"items\":[],"))
            // Later ones do not wait at all (the clock never moves here).
            #expect(await api.respond(.get, "/library?after=0&wait=300").status == .ok)
        }
    }
}
