import ShutterSystem
import Testing

@testable import ShutterCapture

@Suite struct FrameRateLimiterTests {
    /// Capture instants of a camera at `fps`, with `jitter` nanoseconds alternately added and removed.
    private static func frames(fps: Int, count: Int, jitter: UInt64 = 0) -> [MonotonicInstant] {
        let interval = 1_000_000_000 / UInt64(fps)
        return (0..<count).map { index in
            let base = 10_000_000_000 + UInt64(index) * interval
            return MonotonicInstant(nanoseconds: index % 2 == 0 ? base + jitter : base - jitter)
        }
    }

    private static func admitted(cap: Double?, _ instants: [MonotonicInstant]) -> Int {
        var limiter = FrameRateLimiter(framesPerSecond: cap)
        return instants.filter { limiter.admit($0) }.count
    }

    @Test func noCapTakesEveryFrame() {
        #expect(Self.admitted(cap: nil, Self.frames(fps: 30, count: 300)) == 300)
    }

    @Test func aCapEqualToTheCameraRateTakesEveryFrameDespiteJitter() {
        // 3 ms of jitter each way on 33 ms frames.
        #expect(Self.admitted(cap: 30, Self.frames(fps: 30, count: 300, jitter: 3_000_000)) == 300)
    }

    @Test func aCapThatDividesTheRateTakesEveryNthFrame() {
        var limiter = FrameRateLimiter(framesPerSecond: 10)
        let taken = Self.frames(fps: 30, count: 30).enumerated().filter { limiter.admit($0.element) }.map(
            \.offset)
        #expect(taken == [0, 3, 6, 9, 12, 15, 18, 21, 24, 27])
    }

    @Test func aCapThatDoesNotDivideTheRateIsMetOnAverage() {
        // 20 of 30 fps: two frames in three, not 15 (every second frame).
        #expect(Self.admitted(cap: 20, Self.frames(fps: 30, count: 300)) == 200)
        // 1 fps over 100 s (the first frame of a window may come up to a quarter interval early).
        #expect((100...101).contains(Self.admitted(cap: 1, Self.frames(fps: 30, count: 3000))))
    }

    @Test func afterAGapItStartsAfreshInsteadOfBursting() {
        var limiter = FrameRateLimiter(framesPerSecond: 5)
        let start: UInt64 = 10_000_000_000
        let first = limiter.admit(MonotonicInstant(nanoseconds: start))
        #expect(first)
        // The camera was gone for 5 s; frames resume at 30 fps.
        let resumed = (0..<30).map {
            MonotonicInstant(nanoseconds: start + 5_000_000_000 + UInt64($0) * 33_333_333)
        }
        // Five a second from the first resumed frame, with no burst of frames to make up for the gap.
        let admitted = resumed.filter { limiter.admit($0) }
        #expect((5...6).contains(admitted.count))
        for (earlier, later) in zip(admitted, admitted.dropFirst()) {
            #expect(later.nanoseconds(since: earlier) >= 150_000_000)
        }
    }
}
