import Testing

@testable import ShutterCamera

@Suite struct FrameSequencerTests {
    static func numbers(_ driver: [UInt32]) -> [UInt64] {
        var sequencer = FrameSequencer()
        return driver.map { sequencer.number(driverSequence: $0) }
    }

    @Test func countsFromOneWhereverTheDriverStarts() {
        #expect(Self.numbers([500, 501, 502]) == [1, 2, 3])
    }

    @Test func framesTheDriverDroppedLeaveAGap() {
        #expect(Self.numbers([5, 7, 10]) == [1, 3, 6])
        #expect(Self.numbers([UInt32.max, 0, 1]) == [1, 2, 3])
    }

    @Test func aCounterThatDoesNotMoveOrJumpsAroundStillGoesUpByOne() {
        #expect(Self.numbers([0, 0, 0]) == [1, 2, 3])
        #expect(Self.numbers([10, 5, 6]) == [1, 2, 3])
        #expect(
            Self.numbers([1, 1 + FrameSequencer.largestGap + 1, 2 + FrameSequencer.largestGap + 1]) == [
                1, 2, 3,
            ])
    }
}
