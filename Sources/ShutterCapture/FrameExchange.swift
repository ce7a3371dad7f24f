import ShutterSystem

/// Hands encoded frames from the capture thread to the requests waiting for them.
///
/// The capture thread asks `wantsFrame()` before encoding, so frames nobody waits
/// for are never encoded: an idle daemon spends no CPU on JPEG. A camera JPEG that needs no
/// work is kept all the same (`keep`), as the newest frame for a still asked for between waits.
///
/// Live viewers do not wait frame by frame: while `liveDemand` is set, every frame (and every
/// "no signal" frame) also goes to the observer, on the capture thread.
final class FrameExchange: Sendable {
    /// Receives frames for live viewers, the "no signal" picture included.
    typealias Observer = @Sendable (EncodedFrame) -> Void

    private struct Waiter {
        let notBefore: MonotonicInstant
        let continuation: CheckedContinuation<EncodedFrame, any Error>
    }

    private struct State {
        var latest: EncodedFrame?
        /// The newest frame published or kept: `latest`, or a newer one nobody waited for.
        var newest: EncodedFrame?
        var noSignal: EncodedFrame?
        var waiters: [UInt64: Waiter] = [:]
        var nextWaiterID: UInt64 = 1
        var failure: CaptureError?
        var observer: Observer?
        var liveDemand = false
    }

    // All state behind one lock: taken by the capture thread once per frame and by
    // request tasks when they wait; never held across a suspension or a callout.
    private let state = LockedValue(State())
    /// Waiter timeouts are measured on this clock.
    private let clock: any Clock
    /// Rung when a frame becomes wanted, so a capture thread idling with the camera closed opens it.
    private let demand: ThreadWakeup

    init(clock: any Clock, demand: ThreadWakeup) {
        self.clock = clock
        self.demand = demand
    }

    /// Whether anyone is waiting, i.e. whether the next frame should be encoded.
    func wantsFrame() -> Bool {
        state.withLock { !$0.waiters.isEmpty || $0.liveDemand }
    }

    /// Sets who receives every frame while `liveDemand` is on.
    func setObserver(_ observer: Observer?) {
        state.withLock { $0.observer = observer }
    }

    /// Turns the live feed on (someone is watching) or off.
    func setLiveDemand(_ wanted: Bool) {
        state.withLock { $0.liveDemand = wanted }
        if wanted { demand.signal() }
    }

    /// Whether the live feed is on.
    var hasLiveDemand: Bool { state.withLock { $0.liveDemand } }

    /// Publishes a frame and resumes every waiter it satisfies.
    func publish(_ frame: EncodedFrame) {
        let (ready, observer) = state.withLock { state -> ([Waiter], Observer?) in
            state.latest = frame
            state.newest = frame
            state.failure = nil
            var ready: [Waiter] = []
            for (id, waiter) in state.waiters where waiter.notBefore <= frame.capturedAt {
                ready.append(waiter)
                state.waiters.removeValue(forKey: id)
            }
            return (ready, state.liveDemand ? state.observer : nil)
        }
        for waiter in ready { waiter.continuation.resume(returning: frame) }
        observer?(frame)
    }

    /// Keeps a frame nobody waited for as the newest, for `GET /preview.jpg` and
    /// `POST /snap?max_age_ms` to answer with at once. It satisfies no waiter and is not
    /// `latest`, so a waiter (a plain snap, `fresh=true`) still gets only a frame published
    /// while it waited.
    func keep(_ frame: EncodedFrame) {
        state.withLock { $0.newest = frame }
    }

    /// Keeps the frame shown instead of the camera while it is gone.
    func publishNoSignal(_ frame: EncodedFrame) {
        let observer = state.withLock { state -> Observer? in
            state.noSignal = frame
            return state.liveDemand ? state.observer : nil
        }
        observer?(frame)
    }

    /// The newest "no signal" frame, if the camera has failed since start.
    var noSignalFrame: EncodedFrame? { state.withLock { $0.noSignal } }

    /// Fails every current waiter, and later ones until the next `publish`.
    func fail(_ error: CaptureError) {
        let waiters = state.withLock { state -> [Waiter] in
            state.failure = error
            let waiters = Array(state.waiters.values)
            state.waiters.removeAll()
            return waiters
        }
        for waiter in waiters { waiter.continuation.resume(throwing: error) }
    }

    /// Clears a failure once the camera works again.
    func clearFailure() {
        state.withLock { $0.failure = nil }
    }

    /// The current failure, if the camera is not delivering.
    var failure: CaptureError? { state.withLock { $0.failure } }

    /// The newest frame published or kept, if any.
    var newest: EncodedFrame? { state.withLock { $0.newest } }

    /// Waits for the first frame captured at or after `notBefore`; throws
    /// `CaptureError.timedOut` after `timeoutMilliseconds` on the clock.
    func frame(capturedAtOrAfter notBefore: MonotonicInstant, timeoutMilliseconds: Int) async throws
        -> EncodedFrame
    {
        let id = state.withLock { state -> UInt64 in
            defer { state.nextWaiterID += 1 }
            return state.nextWaiterID
        }
        let deadline = clock.monotonicNow().advanced(by: UInt64(max(0, timeoutMilliseconds)) * 1_000_000)
        // The timer starts only once the waiter is registered; `expire` of an id that is not
        // registered yet would be lost and leave the waiter hanging on a stalled camera.
        let registered = LockedValue<Task<Void, Never>?>(nil)
        defer { registered.withLock { $0?.cancel() } }
        return try await withCheckedThrowingContinuation { continuation in
            let immediate: Result<EncodedFrame, any Error>? = state.withLock { state in
                if let failure = state.failure { return .failure(failure) }
                if let latest = state.latest, latest.capturedAt >= notBefore { return .success(latest) }
                state.waiters[id] = Waiter(notBefore: notBefore, continuation: continuation)
                return nil
            }
            if let immediate {
                continuation.resume(with: immediate)
                return
            }
            demand.signal()
            let clock = self.clock
            let expiry = Task { [weak self] in
                do {
                    try await clock.sleep(until: deadline)
                } catch {
                    return
                }
                self?.expire(id, .timedOut(milliseconds: timeoutMilliseconds))
            }
            registered.withLock { $0 = expiry }
        }
    }

    private func expire(_ id: UInt64, _ error: CaptureError) {
        let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
        waiter?.continuation.resume(throwing: error)
    }
}
