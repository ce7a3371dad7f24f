import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCamera

// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct TestPatternSourceTests {
    private func yuv(_ frame: RawFrame) throws -> YUVImage {
        guard case .yuv(let image) = frame.image else {
            throw CameraError.unsupported("expected a YUV frame")
        }
        return image
    }

    @Test func barColoursMatchThePublishedEightBitValues() {
        // 75% bars in 8-bit BT.601 Y'CbCr as tabulated for EBU/SMPTE test signals
        // (white 180/128/128 ... blue 35/212/114).
        let published: [[UInt8]] = [
            [180, 128, 128], [162, 44, 142], [131, 156, 44], [112, 72, 58],
            [84, 184, 198], [65, 100, 212], [35, 212, 114], [16, 128, 128],
        ]
        #expect(TestPatternSource.barColors.map { [$0.y, $0.cb, $0.cr] } == published)
    }

    @Test func framesAreYUV420OfTheModeSize() throws {
        let mode = CameraMode(width: 320, height: 240, fps: 15)
        let source = TestPatternSource(mode: mode, paced: false)
        #expect(source.name == "test-pattern")
        try source.start()
        #expect(source.mode == mode)
        let frame = try source.nextFrame()
        let image = try yuv(frame)
        #expect(frame.width == 320 && frame.height == 240)
        #expect(image.width == 320 && image.height == 240 && image.subsampling == .yuv420)
        #expect(frame.sequence == 1)
    }

    @Test func successiveFramesDifferAndCountUp() throws {
        let width = 640
        let height = 480
        let source = TestPatternSource(mode: CameraMode(width: width, height: height, fps: 30), paced: false)
        try source.start()
        let first = try source.nextFrame()
        let second = try source.nextFrame()
        #expect(second.sequence == first.sequence + 1)
        #expect(second.capturedAt >= first.capturedAt)
        let a = try yuv(first)
        let b = try yuv(second)
        #expect(a.bytes != b.bytes)

        let layout = TestPatternLayout(width: width, height: height)
        // The square moved right: its old left column shows the background now, its new right column is white.
        // The zone plate behind it stays below white (at most 226), so 235 means "square".
        let x1 = layout.squareX(sequence: first.sequence)
        let x2 = layout.squareX(sequence: second.sequence)
        #expect(x2 > x1)
        let squareMiddle = layout.squareY + layout.squareSide / 2
        #expect(a.luma(x: x1, y: squareMiddle) == 235)
        #expect(b.luma(x: x1, y: squareMiddle) < 235)
        #expect(b.luma(x: x2 + layout.squareSide - 1, y: squareMiddle) == 235)
        #expect(a.luma(x: x2 + layout.squareSide - 1, y: squareMiddle) < 235)

        // The counter changed: the text rows differ, the bars do not.
        let textRows = layout.textY * width..<(layout.textY + 9 * layout.textScale) * width
        #expect(a.bytes[textRows] != b.bytes[textRows])
        #expect(a.bytes[..<(layout.barsHeight * width)] == b.bytes[..<(layout.barsHeight * width)])

        // And the difference survives encoding.
        let encoder = try JPEGEncoder(quality: 80)
        let decodedA = try JPEGDecoder.decodeRGB(try encoder.encode(a))
        let decodedB = try JPEGDecoder.decodeRGB(try encoder.encode(b))
        let stripBytes = layout.barsHeight * width * 3..<height * width * 3
        let changed = zip(decodedA.pixels[stripBytes], decodedB.pixels[stripBytes]).filter {
            abs(Int($0) - Int($1)) > 64
        }
        #expect(changed.count > 1000)
    }

    @Test func textLineShowsCounterAndTime() throws {
        let source = TestPatternSource(mode: CameraMode(width: 640, height: 480, fps: 30), paced: false)
        try source.start()
        let frame = try source.nextFrame()
        let layout = TestPatternLayout(width: 640, height: 480)
        var expected = YUVImage(width: 640, height: 480, subsampling: .yuv420)
        let text = "#000001 \(Timestamp.iso8601(millisecondsSince1970: frame.wallMilliseconds))"
        BitmapFont.draw(text, into: &expected, x: layout.textX, y: layout.textY, scale: layout.textScale)
        let box = BitmapFont.size(of: text, scale: layout.textScale)
        let image = try yuv(frame)
        for y in layout.textY..<layout.textY + box.height {
            let row = y * 640 + layout.textX..<y * 640 + layout.textX + box.width
            #expect(image.bytes[row] == expected.bytes[row], "text row \(y)")
        }
    }

    @Test func reusedBufferDoesNotChangeFramesAlreadyReturned() throws {
        let source = TestPatternSource(mode: CameraMode(width: 64, height: 48, fps: 30), paced: false)
        try source.start()
        let first = try yuv(try source.nextFrame())
        let copy = first.bytes
        _ = try source.nextFrame()
        #expect(first.bytes == copy)
    }

    @Test func nextFrameBeforeStartAndAfterStopThrows() throws {
        let source = TestPatternSource(mode: CameraMode(width: 64, height: 48, fps: 30), paced: false)
        #expect(throws: CameraError.notStarted) { try source.nextFrame() }
        try source.start()
        _ = try source.nextFrame()
        source.stop()
        #expect(throws: CameraError.stopped) { try source.nextFrame() }
        try source.start()
        #expect(try source.nextFrame().sequence == 1)
    }

    @Test(arguments: [
        CameraMode(width: 641, height: 480, fps: 30), CameraMode(width: 640, height: 481, fps: 30),
        CameraMode(width: 62, height: 48, fps: 30), CameraMode(width: 64, height: 46, fps: 30),
        CameraMode(width: 640, height: 480, fps: 0),
        CameraMode(width: 640, height: 480, fps: 5000), CameraMode(width: 20000, height: 480, fps: 30),
    ])
    func unsupportedModesAreRefused(mode: CameraMode) {
        let source = TestPatternSource(mode: mode, paced: false)
        #expect {
            try source.start()
        } throws: { error in
            if case CameraError.unsupported = error { return true }
            return false
        }
    }

    @Test(arguments: [(64, 48), (66, 50), (160, 120), (1920, 1080)])
    func squareStaysInsideTheFrameAndMoves(width: Int, height: Int) throws {
        let layout = TestPatternLayout(width: width, height: height)
        #expect(layout.squareY + layout.squareSide <= height)
        #expect(layout.textY + BitmapFont.size(of: "", scale: layout.textScale).height <= layout.squareY)
        let source = TestPatternSource(mode: CameraMode(width: width, height: height, fps: 30), paced: false)
        try source.start()
        let first = try source.nextFrame()
        let a = try yuv(first)
        let b = try yuv(try source.nextFrame())
        let x = layout.squareX(sequence: first.sequence)
        #expect(a.luma(x: x, y: layout.squareY) == 235)
        #expect(b.luma(x: x, y: layout.squareY) < 235)
    }

    @Test func pacedFramesAreDueOnAFixedGrid() throws {
        let interval: UInt64 = 1_000_000_000 / 200
        let clock = ManualClock()
        let source = TestPatternSource(
            mode: CameraMode(width: 64, height: 48, fps: 200), clock: clock, paced: true)
        let start = clock.monotonicNow()
        try source.start()
        var frames: [RawFrame] = []
        // Slot k is due k intervals after the start; the clock is moved to each before it is asked.
        for _ in 0..<20 {
            frames.append(try source.nextFrame())
            clock.advance(by: interval)
        }
        #expect(frames.map(\.sequence) == Array(1...20))
        for (index, frame) in frames.enumerated() {
            #expect(frame.capturedAt == start.advanced(by: UInt64(index) * interval))
        }
        // Late by more than a frame: the slots in between are skipped, not delivered in a burst.
        clock.advance(by: 5 * interval)
        let late = try source.nextFrame()
        #expect(late.sequence == 26)
        #expect(late.capturedAt == start.advanced(by: 25 * interval))
    }

    /// A paced source waits for its next frame on the clock, and `interruptWait` ends that wait.
    @Test func aPacedSourceWaitsOnItsClock() async throws {
        let clock = ManualClock()
        let box = TestPatternBox(
            TestPatternSource(mode: CameraMode(width: 64, height: 48, fps: 10), clock: clock))
        try box.source.start()
        #expect(try box.source.nextFrame().sequence == 1, "slot 0 is due at the start")
        let frame = LockedValue<RawFrame?>(nil)
        let reader = try OSThread.spawn(name: "test-pattern") {
            frame.withLock { $0 = try? box.source.nextFrame() }
        }
        await clock.sleepers(atLeast: 1)
        #expect(clock.nextDeadline == clock.monotonicNow().advanced(by: 100_000_000))
        clock.advance(by: 100_000_000)
        await reader.finished()
        #expect(frame.withLock { $0?.sequence } == 2)

        let interrupted = try OSThread.spawn(name: "test-pattern") { _ = try? box.source.nextFrame() }
        await clock.sleepers(atLeast: 1)
        box.source.interruptWait()
        await interrupted.finished()
        #expect(clock.sleeperCount == 0)
    }
}

/// Hands a source (owned by one thread at a time) to the test's reader threads.
private final class TestPatternBox: @unchecked Sendable {
    // @unchecked Sendable: each test uses the source from one thread at a time, in turn.
    let source: TestPatternSource
    init(_ source: TestPatternSource) { self.source = source }
}
