import CShutterLinux
import ShutterSystem
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// Something registered with the event loop that wants to hear about readiness on its descriptor.
public protocol EventLoopHandler: AnyObject {
    /// Called on the loop thread with the epoll event bits (`EPOLLIN`, `EPOLLOUT`, ...).
    func handleEvents(_ events: UInt32)
}

/// One thread, one epoll instance: every socket the server owns is read and
/// written only here (the swift-nio shape).
///
/// Other threads hand work in with `execute`, which queues a closure and wakes
/// the loop through an eventfd. A timerfd ticks so connections can check their
/// deadlines without a timer per connection.
public final class EventLoop: SerialQueue, @unchecked Sendable {
    private let epollDescriptor: Int32
    private let wakeDescriptor: Int32
    private let tickDescriptor: Int32
    /// How often `onTick` runs, in milliseconds.
    public let tickMilliseconds: Int

    // Reads and writes: lock only; the loop drains it after each eventfd wake-up.
    private let pendingTasks = LockedValue<[@Sendable () -> Void]>([])

    // The fields below are owned by the loop thread: read and written only there.
    private var registrations: [Int32: Registration] = [:]
    private var nextGeneration: UInt32 = 1
    private var running = false
    /// The thread running `run()`, or 0 before it starts. Atomic because `inEventLoop` reads
    /// it from any thread while `run()` writes it (a data race when it was a plain field).
    private let loopThread = Atomic<UInt>(0)
    /// Runs on the loop thread on every tick.
    public var onTick: (() -> Void)?
    /// Also run on the loop thread on every tick, after `onTick`, in the order added.
    private var tickHandlers: [() -> Void] = []

    private struct Registration {
        let generation: UInt32
        let handler: any EventLoopHandler
    }

    public init(tickMilliseconds: Int = 250) throws {
        self.tickMilliseconds = tickMilliseconds
        epollDescriptor = try syscall("epoll_create1") { epoll_create1(Int32(EPOLL_CLOEXEC)) }
        wakeDescriptor = try syscall("eventfd") { eventfd(0, Int32(EFD_NONBLOCK | EFD_CLOEXEC)) }
        tickDescriptor = try syscall("timerfd_create") {
            timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK | TFD_CLOEXEC))
        }
        var spec = itimerspec()
        spec.it_interval.tv_sec = tickMilliseconds / 1000
        spec.it_interval.tv_nsec = (tickMilliseconds % 1000) * 1_000_000
        spec.it_value = spec.it_interval
        _ = try syscall("timerfd_settime") { timerfd_settime(tickDescriptor, 0, &spec, nil) }
        // Generation 0 is reserved for the loop's own descriptors.
        try addToEpoll(wakeDescriptor, events: cshutter_epollin(), generation: 0)
        try addToEpoll(tickDescriptor, events: cshutter_epollin(), generation: 0)
    }

    deinit {
        closeDescriptor(tickDescriptor)
        closeDescriptor(wakeDescriptor)
        closeDescriptor(epollDescriptor)
    }

    /// Whether the caller is on the loop thread.
    public var inEventLoop: Bool {
        let thread = loopThread.load(ordering: .acquiring)
        return thread != 0 && pthread_equal(thread, pthread_self()) != 0
    }

    /// Whether the caller is on the loop thread (`SerialQueue`).
    public var isCurrent: Bool { inEventLoop }

    /// Queues `task` to run on the loop thread; safe from any thread.
    public func execute(_ task: @escaping @Sendable () -> Void) {
        let wasEmpty = pendingTasks.withLock { tasks in
            tasks.append(task)
            return tasks.count == 1
        }
        // One wake-up is enough for any number of queued tasks.
        if wasEmpty {
            var one: UInt64 = 1
            _ = Glibc.write(wakeDescriptor, &one, 8)
        }
    }

    /// Watches `descriptor` for `events`; the handler is called on the loop thread.
    public func register(_ descriptor: Int32, events: UInt32, handler: any EventLoopHandler) throws {
        assert(inEventLoop || !running)
        let generation = nextGeneration
        nextGeneration = nextGeneration == UInt32.max ? 1 : nextGeneration + 1
        try addToEpoll(descriptor, events: events, generation: generation)
        registrations[descriptor] = Registration(generation: generation, handler: handler)
    }

    /// Changes the events watched for a registered descriptor.
    public func modify(_ descriptor: Int32, events: UInt32) throws {
        assert(inEventLoop)
        guard let registration = registrations[descriptor] else { return }
        var event = epoll_event()
        event.events = events
        event.data.u64 = Self.userData(descriptor, registration.generation)
        _ = try syscall("epoll_ctl(MOD)") { epoll_ctl(epollDescriptor, EPOLL_CTL_MOD, descriptor, &event) }
    }

    /// Stops watching `descriptor`; call before closing it.
    public func deregister(_ descriptor: Int32) {
        assert(inEventLoop || !running)
        guard registrations.removeValue(forKey: descriptor) != nil else { return }
        var event = epoll_event()
        _ = epoll_ctl(epollDescriptor, EPOLL_CTL_DEL, descriptor, &event)
    }

    /// Runs the loop on the calling thread until `stop()`.
    public func run() {
        loopThread.store(pthread_self(), ordering: .releasing)
        running = true
        let capacity = 256
        let events = UnsafeMutablePointer<epoll_event>.allocate(capacity: capacity)
        defer { events.deallocate() }
        while running {
            let count = epoll_wait(epollDescriptor, events, Int32(capacity), -1)
            if count < 0 {
                precondition(errno == EINTR, "epoll_wait failed: \(errno)")
                continue
            }
            for index in 0..<Int(count) {
                let event = events[index]
                let descriptor = Int32(truncatingIfNeeded: event.data.u64 >> 32)
                let generation = UInt32(truncatingIfNeeded: event.data.u64)
                if generation == 0 {
                    if descriptor == wakeDescriptor {
                        drainCounter(wakeDescriptor)
                        runPendingTasks()
                    } else if descriptor == tickDescriptor {
                        drainCounter(tickDescriptor)
                        onTick?()
                        for handler in tickHandlers { handler() }
                    }
                    continue
                }
                // An event for a descriptor that was closed and reused since the
                // event was queued carries the old generation: ignore it.
                guard let registration = registrations[descriptor], registration.generation == generation
                else {
                    continue
                }
                registration.handler.handleEvents(event.events)
            }
        }
        runPendingTasks()
    }

    /// Runs `handler` on the loop thread on every tick from now on (call before `run()` or on the
    /// loop thread): periodic work that must stop when the loop does, such as systemd's watchdog.
    public func addTickHandler(_ handler: @escaping () -> Void) {
        assert(inEventLoop || !running)
        tickHandlers.append(handler)
    }

    /// Makes `run()` return after the current iteration; safe from any thread.
    public func stop() {
        execute { [unowned self] in self.running = false }
    }

    private func runPendingTasks() {
        let tasks = pendingTasks.withLock { tasks in
            let taken = tasks
            tasks.removeAll(keepingCapacity: true)
            return taken
        }
        for task in tasks { task() }
    }

    private func drainCounter(_ descriptor: Int32) {
        var value: UInt64 = 0
        _ = Glibc.read(descriptor, &value, 8)
    }

    private func addToEpoll(_ descriptor: Int32, events: UInt32, generation: UInt32) throws {
        var event = epoll_event()
        event.events = events
        event.data.u64 = Self.userData(descriptor, generation)
        _ = try syscall("epoll_ctl(ADD)") { epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, descriptor, &event) }
    }

    private static func userData(_ descriptor: Int32, _ generation: UInt32) -> UInt64 {
        UInt64(UInt32(bitPattern: descriptor)) << 32 | UInt64(generation)
    }
}
