import ShutterCatalog
import ShutterSystem
import Testing

@testable import ShutterAPI

/// `EventStreamState` on its own: what an `/events` stream sends, in which order, when it reads
/// the history, when it sends a keep-alive, with no socket and no clock but the instants given.
@Suite struct EventStreamStateTests {
    private let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    private func event(_ id: Int64, _ type: CatalogEventType = .pictureCreated) -> CatalogEvent {
        CatalogEvent(id: id, type: type, at: 0, data: "{\"id\":\(id)}")
    }

    private func framed(_ ids: [Int64], _ type: CatalogEventType = .pictureCreated) -> [ServerSentEvent] {
        ids.map { ServerSentEvent(event($0, type)) }
    }

    private func page(_ ids: [Int64], missedSome: Bool = false, latest: Int64? = nil) -> CatalogEventPage {
        CatalogEventPage(
            events: ids.map { event($0) }, missedSome: missedSome, latestID: latest ?? ids.last ?? 0)
    }

    /// The ids of the events in an output, in order (`reset` included), and whether it is a
    /// keep-alive comment.
    private func ids(_ output: EventStreamState.Output) -> [Int64] {
        guard case .chunks(let chunks) = output else { return [] }
        return chunks.compactMap { chunk in
            let text = String(decoding: chunk, as: UTF8.self)
            guard text.hasPrefix("id: ") else { return nil }
            return Int64(text.dropFirst(4).prefix { $0 != "\n" })
        }
    }

    private func text(_ output: EventStreamState.Output) -> String {
        guard case .chunks(let chunks) = output else { return "" }
        return chunks.map { String(decoding: $0, as: UTF8.self) }.joined()
    }

    private func live(after cursor: Int64 = 0, limits: EventStreamState.Limits = .init()) -> EventStreamState
    {
        EventStreamState(after: cursor, replay: false, types: nil, limits: limits, now: start)
    }

    @Test func aLiveStreamSendsTheRetryHintThenEachEventFramedOnce() {
        var state = live()
        let result1 = state.nextOutput(now: start)
        #expect(text(result1) == "retry: 1000\n\n")
        let result2 = state.nextOutput(now: start)
        #expect(result2 == .waiting)
        let result3 = state.eventsArrived([
            ServerSentEvent(CatalogEvent(id: 1, type: .jobEnded, at: 5, data: "{\"id\":3}"))
        ])
        #expect(result3)
        let result4 = state.nextOutput(now: start)
        #expect(text(result4) == "id: 1\nevent: job.ended\ndata: {\"id\":3}\n\n")
        let result5 = state.nextOutput(now: start)
        #expect(result5 == .waiting)
    }

    @Test func dataWithALineBreakGoesInOneDataFieldPerLine() {
        let event = ServerSentEvent(CatalogEvent(id: 2, type: .storageState, at: 0, data: "{\n}"))
        #expect(
            String(decoding: event.bytes, as: UTF8.self)
                == "id: 2\nevent: storage.state\ndata: {\ndata: }\n\n")
    }

    @Test func dataWithACarriageReturnIsSplitThereTooAsABrowserWould() {
        // Found by fuzz/FuzzEventStream: EventSource ends a line at CRLF, LF or CR (WHATWG HTML
        // §9.2.6), so a CR left inside a `data:` field would cut the data short there.
        let event = ServerSentEvent(CatalogEvent(id: 2, type: .storageState, at: 0, data: "{\r\n\"a\": 1\r}"))
        #expect(
            String(decoding: event.bytes, as: UTF8.self)
                == "id: 2\nevent: storage.state\ndata: {\ndata: \"a\": 1\ndata: }\n\n")
    }

    @Test func eventsAtOrBelowTheCursorAndRepeatsAreNotSentAgain() {
        var state = live(after: 10)
        _ = state.nextOutput(now: start)
        let result6 = state.eventsArrived(framed([9, 10]))
        #expect(!result6)
        let result7 = state.eventsArrived(framed([10, 11, 12]))
        #expect(result7)
        let result8 = state.eventsArrived(framed([11, 12]))
        #expect(!result8)
        let result9 = state.nextOutput(now: start)
        #expect(ids(result9) == [11, 12])
    }

    @Test func replayReadsTheHistoryAndHoldsLiveEventsUntilItEndsWithoutGapOrRepeat() {
        var state = EventStreamState(after: 5, replay: true, types: nil, limits: .init(), now: start)
        let result10 = state.nextOutput(now: start)
        #expect(text(result10) == "retry: 1000\n\n")
        let result11 = state.nextOutput(now: start)
        #expect(result11 == .fetch(after: 5))
        // Asked once: no second read while the first is out.
        let result12 = state.nextOutput(now: start)
        #expect(result12 == .waiting)
        // Live events arrive while the page is read; 8 is in both.
        let result13 = state.eventsArrived(framed([8, 9]))
        #expect(!result13)
        let result14 = state.pageArrived(page([6, 7, 8]), complete: true)
        #expect(result14)
        let result15 = state.nextOutput(now: start)
        #expect(ids(result15) == [6, 7, 8, 9])
        #expect(!state.isCatchingUp)
        let result16 = state.eventsArrived(framed([10]))
        #expect(result16)
        let result17 = state.nextOutput(now: start)
        #expect(ids(result17) == [10])
    }

    @Test func aFullPageIsFollowedByTheNextOnceItIsSent() {
        let limits = EventStreamState.Limits(pageSize: 2)
        var state = EventStreamState(after: 0, replay: true, types: nil, limits: limits, now: start)
        _ = state.nextOutput(now: start)
        let result18 = state.nextOutput(now: start)
        #expect(result18 == .fetch(after: 0))
        _ = state.eventsArrived(framed([5]))
        let result19 = state.pageArrived(page([1, 2]), complete: false)
        #expect(result19)
        let result20 = state.nextOutput(now: start)
        #expect(ids(result20) == [1, 2])
        let result21 = state.nextOutput(now: start)
        #expect(result21 == .fetch(after: 2))
        let result22 = state.pageArrived(page([3, 4, 5]), complete: true)
        #expect(result22)
        let result23 = state.nextOutput(now: start)
        #expect(ids(result23) == [3, 4, 5])
        #expect(!state.isCatchingUp)
    }

    @Test func aCursorThePrunedHistoryNoLongerCoversGetsOneResetThenWhatFollows() {
        var state = EventStreamState(after: 3, replay: true, types: nil, limits: .init(), now: start)
        _ = state.nextOutput(now: start)
        let result24 = state.nextOutput(now: start)
        #expect(result24 == .fetch(after: 3))
        _ = state.eventsArrived(framed([40, 41]))
        let result25 = state.pageArrived(page([30, 31, 40], missedSome: true, latest: 40), complete: true)
        #expect(result25)
        let output = state.nextOutput(now: start)
        #expect(ids(output) == [40, 41])
        #expect(
            text(output).hasPrefix(
                "id: 40\nevent: reset\ndata: {\"reason\":\"history_pruned\",\"latest_id\":40,\"relist\":\"/library\"}\n\n"
            ))
        #expect(!text(output).contains("event: picture.created\ndata: {\"id\":40}"))
    }

    @Test func theTypesFilterAppliesToLiveEventsAndToTheHistory() {
        var state = EventStreamState(
            after: 0, replay: true, types: [.jobEnded], limits: .init(), now: start)
        _ = state.nextOutput(now: start)
        _ = state.nextOutput(now: start)
        _ = state.eventsArrived(framed([3], .pictureCreated) + framed([4], .jobEnded))
        _ = state.pageArrived(
            CatalogEventPage(
                events: [event(1, .pictureCreated), event(2, .jobEnded)], missedSome: false, latestID: 2),
            complete: true)
        let result26 = state.nextOutput(now: start)
        #expect(ids(result26) == [2, 4])
        let result27 = state.eventsArrived(framed([5], .pictureDeleted))
        #expect(!result27)
    }

    @Test func aCommentIsSentAfterTheKeepAliveIntervalOfSilenceAndNotBefore() {
        var state = live(limits: .init(keepAliveMilliseconds: 15_000))
        _ = state.nextOutput(now: start)
        let almost = start.advanced(by: 14_999_000_000)
        #expect(!state.keepAliveDue(now: almost))
        let result28 = state.nextOutput(now: almost)
        #expect(result28 == .waiting)
        let due = start.advanced(by: 15_000_000_000)
        #expect(state.keepAliveDue(now: due))
        let result29 = state.nextOutput(now: due)
        #expect(text(result29) == ": keep-alive\n\n")
        #expect(!state.keepAliveDue(now: due))
        #expect(state.keepAliveDeadline == due.advanced(by: 15_000_000_000))
        // An event is output too: the silence starts again after it.
        let later = due.advanced(by: 10_000_000_000)
        _ = state.eventsArrived(framed([1]))
        _ = state.nextOutput(now: later)
        #expect(!state.keepAliveDue(now: due.advanced(by: 15_000_000_000)))
    }

    @Test func aReaderTooSlowForItsQueueReadsTheHistoryFromWhatItHasAndMissesNothing() {
        var state = live(limits: .init(maxQueuedEvents: 3, pageSize: 10))
        _ = state.nextOutput(now: start)
        _ = state.eventsArrived(framed([1, 2]))
        let result30 = state.nextOutput(now: start)
        #expect(ids(result30) == [1, 2])
        // The connection is busy writing 1 and 2; four more pile up past the limit of three.
        _ = state.eventsArrived(framed([3, 4]))
        let result31 = state.eventsArrived(framed([5, 6]))
        #expect(result31)
        #expect(state.isCatchingUp)
        #expect(state.overflows == 1)
        // Once it has written everything, it reads the history after what it sent.
        let result32 = state.nextOutput(now: start)
        #expect(result32 == .fetch(after: 2))
        _ = state.eventsArrived(framed([7]))
        _ = state.pageArrived(page([3, 4, 5, 6, 7]), complete: true)
        let result33 = state.nextOutput(now: start)
        #expect(ids(result33) == [3, 4, 5, 6, 7])
        #expect(!state.isCatchingUp)
    }

    @Test func liveEventsDroppedWhileCatchingUpAreReadFromTheHistoryAgain() {
        var state = EventStreamState(
            after: 0, replay: true, types: nil, limits: .init(maxQueuedEvents: 2, pageSize: 10), now: start)
        _ = state.nextOutput(now: start)
        _ = state.nextOutput(now: start)
        _ = state.eventsArrived(framed([2, 3, 4]))
        _ = state.pageArrived(page([1]), complete: true)
        #expect(state.isCatchingUp)
        let result34 = state.nextOutput(now: start)
        #expect(ids(result34) == [1])
        let result35 = state.nextOutput(now: start)
        #expect(result35 == .fetch(after: 1))
        _ = state.pageArrived(page([2, 3, 4]), complete: true)
        let result36 = state.nextOutput(now: start)
        #expect(ids(result36) == [2, 3, 4])
        #expect(!state.isCatchingUp)
    }

    @Test func aFailedReadIsAskedForAgain() {
        var state = EventStreamState(after: 0, replay: true, types: nil, limits: .init(), now: start)
        _ = state.nextOutput(now: start)
        let result37 = state.nextOutput(now: start)
        #expect(result37 == .fetch(after: 0))
        state.pageFailed()
        let result38 = state.nextOutput(now: start)
        #expect(result38 == .fetch(after: 0))
    }
}
