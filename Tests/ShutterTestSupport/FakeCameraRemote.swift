import ShutterMQTT
import ShutterSystem

/// A `CameraRemote` that records what it was asked, and can hold a snap until released.
public final class FakeCameraRemote: CameraRemote {
    public struct Failure: Error {}

    private struct State {
        var snaps: [(label: String?, delaySeconds: Double?)] = []
        var jobRunning = false
        var jobStarts: [Double] = []
        var held = false
        var heldSnaps: [CheckedContinuation<Void, Never>] = []
        var library = MQTTLibraryState(pictures: 0, lastPictureAt: nil)
    }

    private let state = LockedValue(State())
    private let snapsStarted = Broadcast<Int>()

    public init() {}

    /// Labels of the snaps asked for, in order.
    public var snapLabels: [String?] { state.withLock { $0.snaps.map(\.label) } }
    public var snapDelays: [Double?] { state.withLock { $0.snaps.map(\.delaySeconds) } }
    public var jobStarts: [Double] { state.withLock { $0.jobStarts } }
    public var jobRunning: Bool { state.withLock { $0.jobRunning } }

    /// While held, snaps wait in `snap` until `release()`.
    public func hold() { state.withLock { $0.held = true } }

    public func release() {
        let waiting = state.withLock { state in
            state.held = false
            defer { state.heldSnaps.removeAll() }
            return state.heldSnaps
        }
        for continuation in waiting { continuation.resume() }
    }

    /// Returns once `count` snaps have started (held ones included).
    public func waitForSnaps(_ count: Int) async {
        let (stream, continuation) = AsyncStream.makeStream(
            of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let subscription = snapsStarted.subscribe { _ in continuation.yield() }
        defer { subscription.cancel() }
        var iterator = stream.makeAsyncIterator()
        while state.withLock({ $0.snaps.count }) < count { _ = await iterator.next() }
    }

    public func snap(label: String?, delaySeconds: Double?) async throws -> Int64? {
        let count = state.withLock { state in
            state.snaps.append((label, delaySeconds))
            return state.snaps.count
        }
        snapsStarted.publish(count)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let held = state.withLock { state in
                if state.held { state.heldSnaps.append(continuation) }
                return state.held
            }
            if !held { continuation.resume() }
        }
        return delaySeconds == nil ? Int64(count) : nil
    }

    public func startIntervalJob(everySeconds: Double) async throws {
        state.withLock {
            $0.jobStarts.append(everySeconds)
            $0.jobRunning = true
        }
    }

    public func stopIntervalJob() async throws { state.withLock { $0.jobRunning = false } }

    public func intervalJobRunning() async throws -> Bool { jobRunning }

    public func libraryState() async throws -> MQTTLibraryState { state.withLock { $0.library } }
}
