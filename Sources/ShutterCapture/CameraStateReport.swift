/// What `camera.state` events say, from the capture thread's phases: `streaming`, `gone` (with
/// why), `reopened` and `idle`, each once per change.
///
/// The phases say more than a listener wants: a camera that stays unplugged goes through
/// opening and failed at every reopen attempt, and that is one `gone`, not one a second.
public struct CameraStateReport: Sendable, Equatable {
    public enum State: String, Sendable {
        case streaming, gone, reopened, idle
    }

    private var last: State?

    public init() {}

    /// The state to announce on entering `phase` with `failure` standing, or nil for none.
    public mutating func next(_ phase: CapturePhase, failure: CaptureError?) -> (
        state: State, reason: String?
    )? {
        let state: State
        switch phase {
        case .streaming: state = last == .gone ? .reopened : .streaming
        case .failed: state = .gone
        case .idle: state = .idle
        case .opening, .stopped: return nil
        }
        guard state != last else { return nil }
        last = state
        return (state, state == .gone ? failure?.description : nil)
    }
}
