import ShutterCamera
import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Synchronization
import Testing

@testable import ShutterAPI

#if canImport(Glibc)
    import Glibc
#endif

/// `LivePreview` on a real event loop and capture thread, read by a raw-socket viewer.
@Suite struct LivePreviewTests {
    private static let quiet = Logger(label: "test", level: .critical)

    /// Reads one multipart part (after the preamble); returns its `X-Frame-Sequence`.
    private static func readPart(_ socket: TestSocket) -> UInt64? {
        guard let head = socket.readHead() else { return nil }
        var length = 0
        var sequence: UInt64?
        for line in head.split(separator: "\r\n") {
            let pair = line.split(separator: ":", maxSplits: 1).map { String($0.drop { $0 == " " }) }
            guard pair.count == 2 else { continue }
            if pair[0].lowercased() == "content-length" { length = Int(pair[1]) ?? 0 }
            if pair[0].lowercased() == "x-frame-sequence" { sequence = UInt64(pair[1]) }
        }
        _ = socket.read(count: length)
        _ = socket.read(count: LivePreview.partEnd.count)
        return sequence
    }

    /// "Never makes the daemon queue frames": while the loop is busy (many viewers, a slow
    /// handler), the capture thread still posts one `loop.execute` per frame, each holding its
    /// frame; afterwards every queued frame is delivered in a burst, oldest first, instead of
    /// the viewer skipping to the newest.
    @Test func aBusyLoopDoesNotQueueFramesForViewers() async throws {
        try await onDedicatedThread {
            let source = FakeCameraSource(
                mode: CameraMode(width: 64, height: 48, fps: 100), whenExhausted: .generateLive)
            let capture = try CaptureService(source: source, quality: 80, logger: Self.quiet)
            let started = Atomic<Bool>(false)
            Task {
                try await capture.start()
                started.store(true, ordering: .relaxed)
            }
            while !started.load(ordering: .relaxed) { usleep(1000) }
            let preview = LivePreview(
                capture: capture, quality: 80, stallTimeoutMilliseconds: 10_000, logger: Self.quiet)
            var router = Router()
            router.add(
                .get, "/preview.mjpg",
                .immediate { _, _ in
                    HTTPResponse(
                        headers: ["Content-Type": LivePreview.contentType],
                        body: .stream(
                            preview.makeViewer(framesPerSecond: nil, width: nil, advanceHeaders: false)))
                })
            let running = try RunningHTTPServer(router: router)
            defer { running.stop() }
            let socket = try TestSocket(port: running.port)
            try socket.send("GET /preview.mjpg HTTP/1.1\r\nHost: t\r\n\r\n")
            #expect(socket.readHead()?.hasPrefix("HTTP/1.1 200") == true)
            _ = socket.read(count: LivePreview.preamble.count)
            for _ in 0..<5 { _ = Self.readPart(socket) }

            // The loop is busy for a second; note the newest frame when it is free again.
            let newestAtUnblock = Atomic<UInt64>(0)
            running.loop.execute {
                usleep(1_000_000)
                newestAtUnblock.store(capture.status.framesCaptured, ordering: .relaxed)
            }
            usleep(1_100_000)
            var stale = 0
            for _ in 0..<200 {
                guard let sequence = Self.readPart(socket) else { break }
                if sequence + 5 < newestAtUnblock.load(ordering: .relaxed) {
                    stale += 1
                } else {
                    break
                }
            }
            // The part in flight and the one in the viewer's slot at most.
            #expect(stale <= 2, "\(stale) frames older than the newest were sent after the loop was free")
            Task { await capture.stop() }
        }
    }
}
