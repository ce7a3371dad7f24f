import CMosquitto
import ShutterOutbox
import ShutterSystem

/// One connection to an MQTT broker through libmosquitto, its network loop on a thread this
/// client owns (`mosquitto_loop`), which also reconnects with backoff for as long as the client runs.
///
/// Tasks publish and await the broker's PUBACK without holding a thread: `mosquitto_publish`
/// only queues the packet and wakes the network thread (the handle is marked threaded), and
/// the continuation is resumed from the network thread's `on_publish` callback, or failed by a
/// timeout, a lost connection or the task's cancellation.
final class MosquittoClient: @unchecked Sendable {
    // @unchecked Sendable: `handle` is created in init and destroyed in `stop()` after the network
    // thread has been joined; libmosquitto's own mutexes guard it between (threaded mode).
    // Everything else mutable is in `state`, behind its lock.

    struct Settings: Sendable {
        var url: MQTTBrokerURL
        var clientID: String
        /// Published by the broker for us when the connection dies without a DISCONNECT.
        var will: MQTTPublication
        var keepAliveSeconds: Int32 = 30
        /// How long a publish waits for its PUBACK before it fails (and is retried by the outbox).
        var acknowledgementTimeoutNanoseconds: UInt64 = 10_000_000_000
        /// How long a publish made while disconnected waits for the connection before it fails:
        /// a broker that comes back is used at once, rather than after the outbox's backoff.
        var connectionWaitNanoseconds: UInt64 = 30_000_000_000
        /// Publishes unacknowledged at once, counting timed-out ones, before new ones are refused.
        var maximumUnacknowledged = 64
        var reconnectBackoff = RetryBackoff(
            initialNanoseconds: 500_000_000, maximumNanoseconds: 10_000_000_000)
    }

    private struct State {
        var table = AcknowledgementTable<Waiter>()
        var connected = false
        var stopping = false
        /// The last connection failure logged, so a repeating one is logged once.
        var lastFailureLogged: String?
        /// Why the broker refused the current attempt (its CONNACK), which says more than the
        /// loop's error that follows.
        var refusal: String?
        /// Publishers waiting for a connection, resumed with whether one came.
        var connectionWaiters: [UInt64: CheckedContinuation<Bool, Never>] = [:]
        /// Waits that ended (timed out, cancelled) before they were registered.
        var endedConnectionWaits: Set<UInt64> = []
        var nextConnectionWait: UInt64 = 0
    }

    /// Who waits for a PUBACK: a task, or the thread that stops the client.
    enum Waiter {
        case task(CheckedContinuation<Void, any Error>)
        case thread(ThreadWakeup)

        func resume(failing error: MQTTError?) {
            switch self {
            case .task(let continuation):
                if let error { continuation.resume(throwing: error) } else { continuation.resume() }
            case .thread(let wakeup):
                wakeup.signal()
            }
        }
    }

    private let settings: Settings
    private let clock: any Clock
    private let logger: Logger
    private let handle: OpaquePointer
    private let state = LockedValue(State())
    private let wakeup = ThreadWakeup()
    private let thread = LockedValue<OSThread?>(nil)
    /// Called on the network thread after each successful CONNACK: publish what every connection
    /// starts with, subscribe.
    private let onConnect: @Sendable (MosquittoClient) -> Void
    /// Called on the network thread for each message from a subscription; must return at once.
    private let onMessage: @Sendable (String, [UInt8]) -> Void

    /// libmosquitto's global set-up, once per process (`mosquitto_lib_init` is not thread-safe;
    /// a static `let` runs it once).
    private static let libraryReady: Bool = {
        mosquitto_lib_init()
        return true
    }()

    init(
        settings: Settings, clock: any Clock, logger: Logger,
        onConnect: @escaping @Sendable (MosquittoClient) -> Void,
        onMessage: @escaping @Sendable (String, [UInt8]) -> Void
    ) throws(MQTTError) {
        _ = Self.libraryReady
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.onConnect = onConnect
        self.onMessage = onMessage
        // A clean session: what was not acknowledged is still in the outbox and sent again.
        guard let handle = mosquitto_new(settings.clientID, true, nil) else {
            throw .library(call: "mosquitto_new", code: Int32(MOSQ_ERR_NOMEM.rawValue))
        }
        self.handle = handle
        mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
        do {
            try check("mosquitto_threaded_set", mosquitto_threaded_set(handle, true))
            if let username = settings.url.username {
                try check(
                    "mosquitto_username_pw_set",
                    mosquitto_username_pw_set(handle, username, settings.url.password))
            }
            if settings.url.secure {
                // The system's certificate store (OpenSSL's default paths), and the broker's host
                // name checked against its certificate (libmosquitto's default, never turned off).
                try check(
                    "mosquitto_int_option(TLS_USE_OS_CERTS)",
                    mosquitto_int_option(handle, MOSQ_OPT_TLS_USE_OS_CERTS, 1))
            }
            let will = settings.will
            try check(
                "mosquitto_will_set",
                will.payload.withUnsafeBytes {
                    mosquitto_will_set(
                        handle, will.topic, Int32($0.count), $0.baseAddress, will.qos, will.retain)
                })
        } catch {
            mosquitto_destroy(handle)
            throw error
        }
        mosquitto_connect_callback_set(handle) { _, context, code in
            MosquittoClient.from(context).connected(code: code)
        }
        mosquitto_disconnect_callback_set(handle) { _, context, code in
            MosquittoClient.from(context).disconnected(code: code)
        }
        mosquitto_publish_callback_set(handle) { _, context, mid in
            MosquittoClient.from(context).acknowledged(mid: mid)
        }
        mosquitto_message_callback_set(handle) { _, context, message in
            guard let message = message?.pointee else { return }
            let topic = String(cString: message.topic)
            let count = Int(max(0, message.payloadlen))
            let payload =
                count == 0
                ? [] : Array(UnsafeRawBufferPointer(start: message.payload, count: count))
            MosquittoClient.from(context).onMessage(topic, payload)
        }
    }

    private static func from(_ context: UnsafeMutableRawPointer?) -> MosquittoClient {
        Unmanaged<MosquittoClient>.fromOpaque(context!).takeUnretainedValue()
    }

    /// Whether the broker accepted the connection and it has not ended since.
    var isConnected: Bool { state.withLock { $0.connected } }

    /// Starts the network thread, which connects (and reconnects) until `stop()`.
    func start() throws {
        let thread = try OSThread.spawn(name: "mqtt") { [self] in runNetworkLoop() }
        self.thread.withLock { $0 = thread }
    }

    /// Publishes `publication` and returns once the broker acknowledged it (QoS 1), or at once
    /// for QoS 0. While disconnected it first waits for the connection, `connectionWaitNanoseconds`
    /// at most, then throws: the outbox keeps the event and retries.
    func publish(_ publication: MQTTPublication) async throws {
        try await awaitConnection()
        let refusal = state.withLock { state -> MQTTError? in
            if state.stopping { return .stopped }
            if !state.connected { return .notConnected }
            let outstanding = state.table.outstanding
            return outstanding >= settings.maximumUnacknowledged ? .tooManyUnacknowledged(outstanding) : nil
        }
        if let refusal { throw refusal }
        let mid = try send(publication)
        guard publication.qos > 0 else { return }
        let timeout = settings.acknowledgementTimeoutNanoseconds
        let deadline = clock.monotonicNow().advanced(by: timeout)
        let timer = Task { [clock] in
            do { try await clock.sleep(until: deadline) } catch { return }
            self.giveUp(mid, .acknowledgementTimedOut(milliseconds: timeout / 1_000_000))
        }
        defer { timer.cancel() }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation {
                (continuation: CheckedContinuation<Void, any Error>) in
                let known = state.withLock { $0.table.register(mid, .task(continuation)) }
                switch known {
                case nil: break
                case .acknowledged?: continuation.resume()
                case .failed(let error)?: continuation.resume(throwing: error)
                }
            }
        } onCancel: {
            self.giveUp(mid, .stopped)
        }
    }

    /// Returns at once while connected; else waits for the connection, `connectionWaitNanoseconds`
    /// at most, and throws `notConnected` if none came (or the task was cancelled, or the client stops).
    func awaitConnection() async throws {
        guard !isConnected else { return }
        let deadline = clock.monotonicNow().advanced(by: settings.connectionWaitNanoseconds)
        guard await waitForConnection(until: deadline) else { throw MQTTError.notConnected }
    }

    /// Returns true once connected, false at `deadline`, on cancellation or when stopping.
    private func waitForConnection(until deadline: MonotonicInstant) async -> Bool {
        let id = state.withLock { state in
            state.nextConnectionWait += 1
            return state.nextConnectionWait
        }
        let timer = Task { [clock] in
            do { try await clock.sleep(until: deadline) } catch { return }
            self.endConnectionWait(id)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let known = state.withLock { state -> Bool? in
                    if state.connected { return true }
                    if state.stopping || state.endedConnectionWaits.remove(id) != nil { return false }
                    state.connectionWaiters[id] = continuation
                    return nil
                }
                if let known { continuation.resume(returning: known) }
            }
        } onCancel: {
            self.endConnectionWait(id)
        }
    }

    private func endConnectionWait(_ id: UInt64) {
        let waiter = state.withLock { state in
            guard let waiter = state.connectionWaiters.removeValue(forKey: id) else {
                state.endedConnectionWaits.insert(id)
                return CheckedContinuation<Bool, Never>?.none
            }
            return waiter
        }
        waiter?.resume(returning: false)
    }

    /// Publishes without waiting for the acknowledgement: what each connection starts with.
    func publishWithoutWaiting(_ publication: MQTTPublication) {
        do {
            _ = try send(publication)
        } catch {
            logger.warning("could not publish", ["topic": publication.topic, "error": "\(error)"])
        }
    }

    /// Subscribes to `topic` with QoS 1 (a command is not lost to a reconnect on the broker's side).
    func subscribe(_ topic: String) {
        let code = mosquitto_subscribe(handle, nil, topic, 1)
        if code != Int32(MOSQ_ERR_SUCCESS.rawValue) {
            logger.warning(
                "could not subscribe",
                ["topic": topic, "error": "\(MQTTError.library(call: "mosquitto_subscribe", code: code))"])
        }
    }

    /// Publishes `farewell` (waiting for it at most `graceNanoseconds`), disconnects cleanly (so
    /// the broker does not send the will), and ends the network thread. Blocks the caller.
    func stop(farewell: MQTTPublication?, graceNanoseconds: UInt64 = 2_000_000_000) {
        let wasConnected = state.withLock { $0.connected }
        if let farewell, wasConnected, let mid = try? send(farewell) {
            // Waits on this (non-pool) thread while the network thread sends and reads the PUBACK.
            let done = ThreadWakeup()
            if state.withLock({ $0.table.register(mid, .thread(done)) }) == nil {
                _ = clock.wait(for: done, until: clock.monotonicNow().advanced(by: graceNanoseconds))
            }
        }
        let (failed, waitingForConnection) = state.withLock { state in
            state.stopping = true
            state.connected = false
            defer { state.connectionWaiters.removeAll() }
            return (state.table.failAll(), Array(state.connectionWaiters.values))
        }
        for waiter in failed { waiter.resume(failing: .stopped) }
        for waiter in waitingForConnection { waiter.resume(returning: false) }
        mosquitto_disconnect(handle)
        wakeup.signal()
        thread.withLock { $0 }?.join()
        mosquitto_destroy(handle)
    }

    private func send(_ publication: MQTTPublication) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        let code = publication.payload.withUnsafeBytes {
            mosquitto_publish(
                handle, &mid, publication.topic, Int32($0.count), $0.baseAddress, publication.qos,
                publication.retain)
        }
        try check("mosquitto_publish", code)
        return mid
    }

    private func giveUp(_ mid: Int32, _ error: MQTTError) {
        let waiter = state.withLock { $0.table.abandon(mid) }
        waiter?.resume(failing: error)
    }

    // MARK: The network thread

    private func runNetworkLoop() {
        var failuresInRow = 0
        var socketOpen = false
        while !state.withLock({ $0.stopping }) {
            if !socketOpen {
                let code = mosquitto_connect_async(
                    handle, settings.url.host, Int32(settings.url.port), settings.keepAliveSeconds)
                if code != Int32(MOSQ_ERR_SUCCESS.rawValue) {
                    failuresInRow += 1
                    noteFailure(MQTTError.library(call: "mosquitto_connect_async", code: code).description)
                    waitBeforeReconnecting(failuresInRow)
                    continue
                }
                socketOpen = true
            }
            // 500 ms: how long a stop may wait for the loop to notice; publishes wake it at once.
            let code = mosquitto_loop(handle, 500, 1)
            if code != Int32(MOSQ_ERR_SUCCESS.rawValue) {
                socketOpen = false
                connectionEnded()
                if state.withLock({ $0.stopping }) { break }
                failuresInRow += 1
                let refusal = state.withLock { state in
                    defer { state.refusal = nil }
                    return state.refusal
                }
                noteFailure(refusal ?? MQTTError.library(call: "mosquitto_loop", code: code).description)
                waitBeforeReconnecting(failuresInRow)
            } else if failuresInRow > 0, isConnected {
                failuresInRow = 0
            }
        }
        // Sends the DISCONNECT `stop` queued.
        if socketOpen { _ = mosquitto_loop(handle, 100, 1) }
    }

    private func waitBeforeReconnecting(_ failuresInRow: Int) {
        let delay = settings.reconnectBackoff.delay(
            afterFailures: failuresInRow, unit: Double.random(in: 0..<1))
        _ = clock.wait(for: wakeup, until: clock.monotonicNow().advanced(by: delay))
    }

    /// CONNACK: 0 accepted; otherwise refused (a wrong password is 5, "not authorised").
    private func connected(code: Int32) {
        guard code == 0 else {
            noteFailure(
                "the broker refused the connection: \(String(cString: mosquitto_connack_string(code)))")
            return
        }
        state.withLock {
            $0.connected = true
            $0.lastFailureLogged = nil
        }
        logger.notice("connected to the MQTT broker", ["broker": settings.url.description])
        onConnect(self)
        // After what every connection starts with, so the availability comes before any event.
        let waiting = state.withLock { state in
            defer {
                state.connectionWaiters.removeAll()
                state.endedConnectionWaits.removeAll()
            }
            return Array(state.connectionWaiters.values)
        }
        for waiter in waiting { waiter.resume(returning: true) }
    }

    private func disconnected(code: Int32) {
        connectionEnded()
    }

    private func connectionEnded() {
        let (waiters, was) = state.withLock { state in
            defer { state.connected = false }
            return (state.table.failAll(), state.connected)
        }
        for waiter in waiters { waiter.resume(failing: .connectionLost) }
        if was, !state.withLock({ $0.stopping }) {
            logger.warning("lost the connection to the MQTT broker", ["broker": settings.url.description])
        }
    }

    private func acknowledged(mid: Int32) {
        let waiter = state.withLock { $0.table.acknowledge(mid) }
        waiter?.resume(failing: nil)
    }

    /// Logs a connection failure once until it changes or a connection succeeds.
    private func noteFailure(_ description: String) {
        let first = state.withLock { state -> Bool in
            defer { state.lastFailureLogged = description }
            return state.lastFailureLogged != description
        }
        if first {
            logger.warning(
                "cannot connect to the MQTT broker; retrying with backoff",
                ["broker": settings.url.description, "error": description])
        }
    }

    private func check(_ call: String, _ code: Int32) throws(MQTTError) {
        guard code == Int32(MOSQ_ERR_SUCCESS.rawValue) else { throw .library(call: call, code: code) }
    }
}
