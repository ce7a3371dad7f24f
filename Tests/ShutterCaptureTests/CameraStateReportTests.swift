import ShutterCapture
import Testing

@Suite struct CameraStateReportTests {
    private func run(_ phases: [(CapturePhase, CaptureError?)]) -> [String] {
        var report = CameraStateReport()
        return phases.compactMap { phase, failure in
            report.next(phase, failure: failure).map {
                "\($0.state.rawValue)\($0.reason.map { ":" + $0 } ?? "")"
            }
        }
    }

    @Test func aCameraThatStaysGoneIsGoneOnceThenReopened() {
        let unplugged = CaptureError.timedOut(milliseconds: 2000)
        let states = run([
            (.opening, nil), (.streaming, nil), (.failed, unplugged), (.opening, unplugged),
            (.failed, unplugged), (.opening, unplugged), (.failed, unplugged), (.opening, unplugged),
            (.streaming, nil), (.stopped, nil),
        ])
        #expect(states == ["streaming", "gone:\(unplugged.description)", "reopened"])
    }

    @Test func idleAndBackAreEachSaidOnce() {
        let states = run([
            (.opening, nil), (.streaming, nil), (.idle, nil), (.opening, nil), (.streaming, nil),
        ])
        #expect(states == ["streaming", "idle", "streaming"])
    }

    @Test func aCameraThatNeverOpensIsGoneFromTheStart() {
        let busy = CaptureError.stopped
        #expect(
            run([(.opening, nil), (.failed, busy), (.opening, busy), (.failed, busy)]) == [
                "gone:\(busy.description)"
            ])
    }
}
