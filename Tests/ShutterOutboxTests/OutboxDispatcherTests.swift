import ShutterCatalog
import ShutterOutbox
import ShutterSystem
import ShutterTestSupport
import Testing

private let quietLogger = Logger(label: "shutter.outbox.test", level: .error)

/// A catalog in `directory` on `clock`, with `limits` for its history.
private func openCatalog(
    _ directory: String, clock: ManualClock, limits: EventHistoryLimits = EventHistoryLimits()
) throws -> MediaCatalog {
    try MediaCatalog(dataDirectory: directory, logger: quietLogger, eventHistoryLimits: limits, clock: clock)
}

private func addPicture(_ catalog: MediaCatalog, _ seed: Int) async throws -> MediaRecord {
    try await catalog.add(
        jpeg: [0xFF, 0xD8, UInt8(truncatingIfNeeded: seed), 0xFF, 0xD9],
        takenAt: 1_700_000_000_000 + Int64(seed),
        width: 4, height: 4, source: "test")
}

@Suite struct OutboxDispatcherTests {
    @Test func aNewSinkStartsFromNowAndDeliversInOrder() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try openCatalog(directory, clock: clock)
            _ = try await addPicture(catalog, 1)
            let sink = RecordingOutboxSink()
            let dispatcher = OutboxDispatcher(sink: sink, catalog: catalog, clock: clock, logger: quietLogger)
            dispatcher.start()
            // The sink's cursor is saved before the next event can be recorded.
            while try await catalog.sinkCursor("test") == nil { await Task.yield() }
            let records = try await (2...4).asyncMap { try await addPicture(catalog, $0) }
            #expect(try await catalog.delete(id: 2))
            await sink.waitUntil { $0.delivered.count == 4 }
            #expect(sink.delivered.map(\.id) == [2, 3, 4, 5])
            #expect(sink.delivered.prefix(3).map(\.data) == records.map(\.json))
            #expect(sink.delivered.last?.type == .pictureDeleted)
            await dispatcher.stop()
            #expect(try await catalog.sinkCursor("test") == 5)
            let status = dispatcher.status
            #expect(status.delivered == 4 && status.failures == 0 && status.cursor == 5 && status.lag == 0)
        }
    }

    @Test func failuresAreRetriedWithBackoffAndNothingIsSkipped() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try openCatalog(directory, clock: clock)
            let sink = RecordingOutboxSink()
            let dispatcher = OutboxDispatcher(
                sink: sink, catalog: catalog, clock: clock,
                backoff: RetryBackoff(initialNanoseconds: 1_000_000_000, maximumNanoseconds: 8_000_000_000),
                logger: quietLogger)
            dispatcher.start()
            while try await catalog.sinkCursor("test") == nil { await Task.yield() }
            sink.failNext(3)
            for seed in 1...3 { _ = try await addPicture(catalog, seed) }
            for failure in 1...3 {
                await sink.waitUntil { $0.attempts == failure }
                await clock.sleepers(atLeast: 1)
                // Not retried before half of the backoff has passed.
                let delay = clock.nextDeadline!.nanoseconds(since: clock.monotonicNow())
                let full = UInt64(1_000_000_000) << UInt64(failure - 1)
                #expect(delay >= full / 2 && delay <= full)
                #expect(dispatcher.status.lastError == "the destination is down")
                clock.advance(by: delay)
            }
            await sink.waitUntil { $0.delivered.count == 3 }
            #expect(sink.delivered.map(\.id) == [1, 2, 3])
            #expect(sink.attempts == 6)
            // The sink records a delivery before the dispatcher counts it: stop first, so the
            // status is read after the last count rather than racing it.
            await dispatcher.stop()
            let status = dispatcher.status
            #expect(status.failures == 3 && status.delivered == 3 && status.lastError == nil)
        }
    }

    @Test func eventsRecordedWhileStoppedAreDeliveredAfterARestart() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            do {
                let catalog = try openCatalog(directory, clock: clock)
                let sink = RecordingOutboxSink()
                let dispatcher = OutboxDispatcher(
                    sink: sink, catalog: catalog, clock: clock, logger: quietLogger)
                dispatcher.start()
                while try await catalog.sinkCursor("test") == nil { await Task.yield() }
                _ = try await addPicture(catalog, 1)
                await sink.waitUntil { $0.delivered.count == 1 }
                await dispatcher.stop()
                for seed in 2...3 { _ = try await addPicture(catalog, seed) }
            }
            let catalog = try openCatalog(directory, clock: clock)
            let sink = RecordingOutboxSink()
            let dispatcher = OutboxDispatcher(sink: sink, catalog: catalog, clock: clock, logger: quietLogger)
            dispatcher.start()
            await sink.waitUntil { $0.delivered.count == 2 }
            #expect(sink.delivered.map(\.id) == [2, 3])
            await dispatcher.stop()
        }
    }

    @Test func eventsOfOtherTypesPassWithoutACall() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try openCatalog(directory, clock: clock)
            let sink = RecordingOutboxSink(eventTypes: [.pictureDeleted])
            let dispatcher = OutboxDispatcher(sink: sink, catalog: catalog, clock: clock, logger: quietLogger)
            dispatcher.start()
            while try await catalog.sinkCursor("test") == nil { await Task.yield() }
            for seed in 1...3 { _ = try await addPicture(catalog, seed) }
            #expect(try await catalog.delete(id: 1))
            await sink.waitUntil { $0.delivered.count == 1 }
            #expect(sink.delivered.map(\.type) == [.pictureDeleted])
            _ = try await addPicture(catalog, 4)
            // The picture.created after the delete moves the cursor without a delivery.
            while dispatcher.status.cursor != 5 { await Task.yield() }
            await dispatcher.stop()
            #expect(try await catalog.sinkCursor("test") == 5)
            #expect(sink.attempts == 1)
        }
    }

    @Test func whatThePrunedHistoryLostIsCountedAndDeliveryGoesOn() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try openCatalog(
                directory, clock: clock, limits: EventHistoryLimits(maxEvents: 10, maxAgeMilliseconds: nil))
            let sink = RecordingOutboxSink()
            let dispatcher = OutboxDispatcher(
                sink: sink, catalog: catalog, clock: clock,
                backoff: RetryBackoff(initialNanoseconds: 1_000_000_000, maximumNanoseconds: 1_000_000_000),
                logger: quietLogger)
            dispatcher.start()
            while try await catalog.sinkCursor("test") == nil { await Task.yield() }
            sink.setDown(true)
            _ = try await addPicture(catalog, 1)
            await sink.waitUntil { $0.attempts >= 1 }
            // Thirty more while the sink is down: the history keeps only about the last ten.
            for seed in 2...31 { _ = try await addPicture(catalog, seed) }
            sink.setDown(false)
            await clock.sleepers(atLeast: 1)
            clock.advance(by: 1_000_000_000)
            await sink.waitUntil { $0.delivered.last?.id == 31 }
            let status = dispatcher.status
            let history = await catalog.eventHistoryState()
            // Event 1 was in hand when it was pruned, so it is delivered; what came after it and
            // was pruned is counted as dropped, and the rest arrives in order.
            #expect(sink.delivered.first?.id == 1)
            #expect(status.dropped == UInt64(history.prunedThrough - 1))
            #expect(sink.delivered.dropFirst().map(\.id) == Array((history.prunedThrough + 1)...31))
            await dispatcher.stop()
        }
    }

    @Test func aSinkThatWaitedForItsDestinationIsRetriedSoonNotAfterAGrowingBackoff() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try openCatalog(directory, clock: clock)
            let sink = RecordingOutboxSink()
            let dispatcher = OutboxDispatcher(
                sink: sink, catalog: catalog, clock: clock,
                backoff: RetryBackoff(initialNanoseconds: 1_000_000_000, maximumNanoseconds: 300_000_000_000),
                logger: quietLogger)
            dispatcher.start()
            while try await catalog.sinkCursor("test") == nil { await Task.yield() }
            // As the MQTT sink fails after waiting for its reconnect: a broker down for minutes.
            sink.setDown(true, waitingForDestination: true)
            _ = try await addPicture(catalog, 1)
            for failure in 1...8 {
                await sink.waitUntil { $0.attempts == failure }
                await clock.sleepers(atLeast: 1)
                // Without the wait, the eighth pause would be 64 to 128 s.
                let delay = clock.nextDeadline!.nanoseconds(since: clock.monotonicNow())
                #expect(delay >= 500_000_000 && delay <= 1_000_000_000)
                if failure == 8 { sink.setDown(false) }
                clock.advance(by: delay)
            }
            await sink.waitUntil { $0.delivered.count == 1 }
            #expect(dispatcher.status.failures == 8)
            // Failures of another kind still back off more each time.
            sink.failNext(3)
            _ = try await addPicture(catalog, 2)
            for failure in 1...3 {
                await sink.waitUntil { $0.attempts == 9 + failure }
                await clock.sleepers(atLeast: 1)
                let delay = clock.nextDeadline!.nanoseconds(since: clock.monotonicNow())
                #expect(delay >= (UInt64(1_000_000_000) << UInt64(failure - 1)) / 2)
                clock.advance(by: delay)
            }
            await sink.waitUntil { $0.delivered.count == 2 }
            await dispatcher.stop()
        }
    }

    @Test func lagCountsEveryEventRecordedWhileTheSinkIsStuckOnOne() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try openCatalog(directory, clock: clock)
            let sink = RecordingOutboxSink()
            let dispatcher = OutboxDispatcher(
                sink: sink, catalog: catalog, clock: clock,
                backoff: RetryBackoff(initialNanoseconds: 1_000_000_000, maximumNanoseconds: 1_000_000_000),
                logger: quietLogger)
            dispatcher.start()
            while try await catalog.sinkCursor("test") == nil { await Task.yield() }
            sink.setDown(true)
            _ = try await addPicture(catalog, 1)
            // The first attempt failed and the dispatcher waits out its backoff: no page is read
            // until the clock moves, yet /status must show the events recorded meanwhile.
            await sink.waitUntil { $0.attempts >= 1 }
            await clock.sleepers(atLeast: 1)
            #expect(dispatcher.status.lag == 1)
            for seed in 2...6 { _ = try await addPicture(catalog, seed) }
            #expect(dispatcher.status.lag == 6)
            #expect(dispatcher.status.cursor == 0)
            sink.setDown(false)
            clock.advance(by: 1_000_000_000)
            await sink.waitUntil { $0.delivered.count == 6 }
            while dispatcher.status.cursor != 6 { await Task.yield() }
            #expect(dispatcher.status.lag == 0)
            await dispatcher.stop()
        }
    }

    /// Cursor commits share the catalog's thread with the pictures: while events flow, at most
    /// one a second, and the last one when the flow stops, once that second has passed.
    @Test func theCursorIsSavedAtMostOnceAnIntervalAndOnceMoreWhenIdle() async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualClock()
            let catalog = try openCatalog(directory, clock: clock)
            let sink = RecordingOutboxSink()
            let dispatcher = OutboxDispatcher(
                sink: sink, catalog: catalog, clock: clock, cursorSaveIntervalNanoseconds: 1_000_000_000,
                logger: quietLogger)
            dispatcher.start()
            while try await catalog.sinkCursor("test") == nil { await Task.yield() }
            let start = try #require(try await catalog.sinkCursor("test"))
            for seed in 1...3 { _ = try await addPicture(catalog, seed) }
            await sink.waitUntil { $0.delivered.count == 3 }
            while dispatcher.status.cursor != start + 3 { await Task.yield() }
            // Delivered and acknowledged, not yet committed: the interval has not passed.
            #expect(try await catalog.sinkCursor("test") == start)
            // The ring scheduled for when it is due saves it, with no new event.
            await clock.sleepers(atLeast: 1)
            clock.advance(by: 1_000_000_000)
            while try await catalog.sinkCursor("test") != start + 3 { await Task.yield() }
            // A stop saves what was acknowledged since, whatever the time.
            _ = try await addPicture(catalog, 4)
            await sink.waitUntil { $0.delivered.count == 4 }
            while dispatcher.status.cursor != start + 4 { await Task.yield() }
            #expect(try await catalog.sinkCursor("test") == start + 3)
            await dispatcher.stop()
            #expect(try await catalog.sinkCursor("test") == start + 4)
        }
    }
}

@Suite struct RetryBackoffTests {
    @Test func doublesFromTheFirstDelayUpToTheCapWithinTheUpperHalf() {
        let backoff = RetryBackoff(initialNanoseconds: 1000, maximumNanoseconds: 10_000)
        #expect(backoff.delay(afterFailures: 1, unit: 0) == 500)
        #expect(backoff.delay(afterFailures: 1, unit: 0.999) == 999)
        #expect(backoff.delay(afterFailures: 2, unit: 0) == 1000)
        #expect(backoff.delay(afterFailures: 4, unit: 0.5) == 6000)
        #expect(backoff.delay(afterFailures: 5, unit: 0) == 5000)
        #expect(backoff.delay(afterFailures: 500, unit: 1) <= 10_000)
        #expect(backoff.delay(afterFailures: 0, unit: 0) == 500)
    }
}

extension Sequence {
    fileprivate func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }

}
