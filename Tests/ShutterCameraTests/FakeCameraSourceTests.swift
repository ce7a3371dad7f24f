import ShutterCamera
import ShutterSystem
import ShutterTestSupport
import Testing

@Suite struct FakeCameraSourceTests {
    @Test func playsTheScriptInOrderAndCounts() throws {
        let source = FakeCameraSource(
            script: FakeCameraSource.frames(2) + [
                .failure(CameraError.device(SystemError(errno: 5, call: "VIDIOC_DQBUF")))
            ]
                + FakeCameraSource.frames(1, from: 7))
        #expect(throws: CameraError.notStarted) { try source.nextFrame() }
        try source.start()
        #expect(source.isRunning)
        #expect(try source.nextFrame().sequence == 1)
        #expect(try source.nextFrame().sequence == 2)
        #expect(throws: CameraError.device(SystemError(errno: 5, call: "VIDIOC_DQBUF"))) {
            try source.nextFrame()
        }
        #expect(try source.nextFrame().sequence == 7)
        #expect(source.remainingSteps == 0)
        #expect(throws: CameraError.stopped) { try source.nextFrame() }
        source.stop()
        #expect(throws: CameraError.stopped) { try source.nextFrame() }
        #expect(source.startCount == 1)
        #expect(source.stopCount == 1)
        #expect(source.nextFrameCount == 7)
        #expect(!source.isRunning)
    }

    @Test func startFailuresComeFirst() throws {
        let source = FakeCameraSource(startFailures: [CameraError.unsupported("no such mode")])
        #expect(throws: CameraError.unsupported("no such mode")) { try source.start() }
        #expect(!source.isRunning)
        try source.start()
        #expect(source.isRunning)
        #expect(source.startCount == 2)
    }

    @Test func generatesDecodableFramesWhenAsked() throws {
        let mode = CameraMode(width: 96, height: 64, fps: 30)
        let source = FakeCameraSource(
            mode: mode, script: FakeCameraSource.frames(1, from: 40), whenExhausted: .generate)
        try source.start()
        #expect(try source.nextFrame().sequence == 40)
        let frame = try source.nextFrame()
        #expect(frame.sequence == 41)
        #expect(frame.width == 96 && frame.height == 64)
        guard case .jpeg(let jpeg) = frame.image else {
            Issue.record("fake frames are JPEG")
            return
        }
        let header = try JPEGDecoder.header(of: jpeg)
        #expect(header.width == 96 && header.height == 64)
        source.enqueue(FakeCameraSource.frames(1, from: 100))
        #expect(try source.nextFrame().sequence == 100)
        #expect(try source.nextFrame().sequence == 101)
    }

    @Test func sameSequenceSameBytesDifferentSequenceDifferentBytes() {
        func bytes(_ sequence: UInt64) -> [UInt8] {
            guard case .jpeg(let jpeg) = FakeCameraSource.frame(sequence: sequence).image else { return [] }
            return jpeg
        }
        #expect(bytes(3) == bytes(3))
        #expect(bytes(3) != bytes(4))
        #expect(
            FakeCameraSource.frame(sequence: 3).capturedAt < FakeCameraSource.frame(sequence: 4).capturedAt)
    }
}
