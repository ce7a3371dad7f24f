import Testing

@testable import ShutterCamera

@Suite struct FrameSizesTests {
    @Test func discreteSizesAreTheCandidates() {
        let sizes = [FrameSize(width: 640, height: 480), FrameSize(width: 320, height: 240)]
        #expect(FrameSizes.discrete(sizes).candidates(near: FrameSize(width: 1, height: 1)) == sizes)
    }

    @Test func nothingEnumeratedLetsTheDriverAdjustTheRequest() {
        let requested = FrameSize(width: 1024, height: 768)
        #expect(FrameSizes.discrete([]).candidates(near: requested) == [requested])
        #expect(FrameSizes.discrete([]).candidates(near: nil).isEmpty)
    }

    @Test func stepwiseFitsTheRequestToTheGrid() {
        let sizes = FrameSizes.stepwise(
            minimum: FrameSize(width: 160, height: 120), maximum: FrameSize(width: 1920, height: 1080),
            stepWidth: 16,
            stepHeight: 8)
        #expect(
            sizes.candidates(near: FrameSize(width: 1000, height: 700)) == [
                FrameSize(width: 160, height: 120), FrameSize(width: 1008, height: 704),
                FrameSize(width: 1920, height: 1080),
            ])
        #expect(
            sizes.candidates(near: FrameSize(width: 4000, height: 4000)) == [
                FrameSize(width: 160, height: 120), FrameSize(width: 1920, height: 1080),
            ])
        #expect(
            sizes.candidates(near: nil) == [
                FrameSize(width: 160, height: 120), FrameSize(width: 1920, height: 1080),
            ])
    }
}
