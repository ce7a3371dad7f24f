import ShutterSystem
import Testing

@testable import ShutterCamera

@Suite struct FramePacerTests {
    private let start = MonotonicInstant(nanoseconds: 7_000_000_000)
    private func at(_ milliseconds: UInt64) -> MonotonicInstant {
        start.advanced(by: milliseconds * 1_000_000)
    }

    @Test func onTimeCallerGetsEverySlot() {
        var pacer = FramePacer(start: start, fps: 100)
        #expect(pacer.next(now: at(0)) == (0, at(0)))
        #expect(pacer.next(now: at(1)) == (1, at(10)))
        #expect(pacer.next(now: at(10)) == (2, at(20)))
        #expect(pacer.next(now: at(20)) == (3, at(30)))
    }

    @Test func callerLateByUnderAFrameCatchesUp() {
        var pacer = FramePacer(start: start, fps: 100)
        _ = pacer.next(now: at(0))
        #expect(pacer.next(now: at(19)) == (1, at(10)))
        #expect(pacer.next(now: at(19)) == (2, at(20)))
    }

    @Test func callerLateByMoreThanAFrameSkipsToTheNextDueSlot() {
        var pacer = FramePacer(start: start, fps: 100)
        _ = pacer.next(now: at(0))
        // Slot 1 was due at 10 ms; at 55 ms slots 1...5 are gone and 6 (60 ms) is next.
        #expect(pacer.next(now: at(55)) == (6, at(60)))
        #expect(pacer.next(now: at(60)) == (7, at(70)))
        // Exactly on a slot's due instant, that slot is taken.
        #expect(pacer.next(now: at(100)) == (10, at(100)))
    }

    @Test func dueInstantsDoNotDrift() {
        // 30 fps is 33 333 333.3 ns: summing rounded intervals would lose 10 ns a second.
        let pacer = FramePacer(start: start, fps: 30)
        #expect(pacer.due(slot: 30) == at(1000))
        #expect(pacer.due(slot: 30 * 3600) == at(3_600_000))
        #expect(pacer.due(slot: 1) == start.advanced(by: 33_333_333))
    }

    @Test func yearsOfSlotsDoNotOverflow() {
        let pacer = FramePacer(start: MonotonicInstant(nanoseconds: 0), fps: 1000)
        let tenYears: UInt64 = 10 * 365 * 86400 * 1000
        #expect(pacer.due(slot: tenYears) == MonotonicInstant(nanoseconds: tenYears * 1_000_000))
        var late = FramePacer(start: MonotonicInstant(nanoseconds: 0), fps: 1000)
        #expect(late.next(now: MonotonicInstant(nanoseconds: tenYears * 1_000_000 + 1)).slot == tenYears + 1)
    }
}
