import ShutterCamera
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterCapture

/// The fan-out's policy with the event loop played by hand (`ManualSerialQueue`): which frames
/// reach which viewer, and what piles up while the loop is busy.
// A wait that never ends is a failure, not a hung CI run.
@Suite(.timeLimit(.minutes(1))) struct LivePreviewTests {
    private static let quiet = Logger(label: "test", level: .critical)

    private struct Fixture {
        let capture: CaptureService
        let queue = ManualSerialQueue()
        let clock = ManualClock()
        let preview: LivePreview<TestPreviewPart>

        init() throws {
            // Never started: the test hands frames in itself, as the capture thread would.
            capture = try CaptureService(
                source: FakeCameraSource(mode: CameraMode(width: 64, height: 48, fps: 30)), quality: 80,
                logger: LivePreviewTests.quiet)
            preview = LivePreview(
                capture: capture, quality: 80, queue: queue, clock: clock, logger: LivePreviewTests.quiet)
        }

        func viewer(fps: Double? = nil, width: Int? = nil) -> LivePreviewViewer<TestPreviewPart> {
            let viewer = preview.makeViewer(framesPerSecond: fps, width: width)
            queue.runOnQueue { preview.add(viewer) }
            return viewer
        }

        /// A decodable 64x48 frame captured `sequence` thirtieths of a second in.
        func frame(_ sequence: UInt64) -> EncodedFrame {
            let raw = FakeCameraSource.frame(sequence: sequence)
            guard case .jpeg(let jpeg) = raw.image else { preconditionFailure() }
            return EncodedFrame(
                sequence: sequence, capturedAt: raw.capturedAt, wallMilliseconds: raw.wallMilliseconds,
                width: raw.width, height: raw.height, jpeg: jpeg)
        }
    }

    /// "Never makes the daemon queue frames": while the loop is busy, frames replace each other
    /// in the one hand-off slot; when it is free, the viewer gets the newest, once.
    @Test func aBusyLoopGetsOnlyTheNewestFrame() throws {
        let fixture = try Fixture()
        let viewer = fixture.viewer()
        for sequence in 1...50 { fixture.preview.frameArrived(fixture.frame(UInt64(sequence))) }
        #expect(fixture.queue.pendingCount == 1, "one hand-off queued for fifty frames")
        fixture.queue.runPending()
        #expect(viewer.take()?.frame.sequence == 50)
        #expect(viewer.take() == nil)
        #expect(viewer.statistics.framesSent == 1 && viewer.statistics.framesSkipped == 0)
    }

    @Test func aViewerThatTakesNothingSkipsToTheNewestPart() throws {
        let fixture = try Fixture()
        let slow = fixture.viewer()
        let fast = fixture.viewer()
        for sequence in 1...3 {
            fixture.preview.frameArrived(fixture.frame(UInt64(sequence)))
            fixture.queue.runPending()
            #expect(fast.take()?.frame.sequence == UInt64(sequence))
        }
        // The slow one held one part at a time, the newest; the two before were skipped.
        #expect(slow.take()?.frame.sequence == 3)
        #expect(slow.statistics.framesSkipped == 2 && slow.statistics.framesSent == 1)
        #expect(fast.statistics.framesSkipped == 0 && fast.statistics.framesSent == 3)
        let totals = fixture.preview.statistics
        #expect(totals.viewers.count == 2 && totals.framesSent == 4 && totals.framesSkipped == 2)
    }

    @Test func theFrameRateCapIsMetOnAverage() throws {
        let fixture = try Fixture()
        let capped = fixture.viewer(fps: 10)
        var taken = 0
        for sequence in 1...30 {
            fixture.preview.frameArrived(fixture.frame(UInt64(sequence)))
            fixture.queue.runPending()
            if capped.take() != nil { taken += 1 }
        }
        #expect(taken == 10)
    }

    @Test func aViewerNeverGoesBackToAnOlderFrame() throws {
        let fixture = try Fixture()
        let viewer = fixture.viewer()
        fixture.preview.frameArrived(fixture.frame(5))
        fixture.queue.runPending()
        #expect(viewer.take()?.frame.sequence == 5)
        fixture.preview.frameArrived(fixture.frame(4))
        fixture.queue.runPending()
        #expect(viewer.take() == nil)
    }

    @Test func viewersTurnLiveDemandOnAndOff() throws {
        let fixture = try Fixture()
        #expect(!fixture.capture.hasLiveDemand)
        let first = fixture.viewer()
        let second = fixture.viewer()
        #expect(fixture.capture.hasLiveDemand)
        fixture.queue.runOnQueue { fixture.preview.remove(first) }
        #expect(fixture.capture.hasLiveDemand)
        fixture.queue.runOnQueue { fixture.preview.remove(second) }
        #expect(!fixture.capture.hasLiveDemand)
        let totals = fixture.preview.statistics
        #expect(totals.viewers.isEmpty)
    }

    /// A smaller size is made once per frame on its scaler's own thread, for all its viewers.
    @Test func aSmallerSizeIsScaledOnceForAllItsViewers() async throws {
        let fixture = try Fixture()
        let viewers = [fixture.viewer(width: 30), fixture.viewer(width: 32)]
        #expect(viewers.allSatisfy { $0.statistics.width == 32 }, "both map onto 64/2")
        fixture.preview.frameArrived(fixture.frame(1))
        await fixture.queue.tasks(atLeast: 1)
        fixture.queue.runPending()
        for viewer in viewers {
            let part = try #require(viewer.take())
            #expect(part.frame.width == 32 && part.frame.height == 24)
            #expect(try JPEGDecoder.header(of: part.frame.jpeg).width == 32)
        }
        #expect(fixture.preview.renditions.map(\.width) == [32])
        #expect(fixture.preview.renditions.first?.framesEncoded == 1)
        for viewer in viewers { fixture.queue.runOnQueue { fixture.preview.remove(viewer) } }
        #expect(fixture.preview.renditions.isEmpty)
    }
}
