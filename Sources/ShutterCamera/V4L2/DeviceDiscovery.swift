import ShutterSystem

/// Lists the V4L2 capture devices for `/cameras` on a thread of its own: opening each node and
/// asking it is blocking I/O (a USB camera can take tens of milliseconds to answer), which must
/// not hold a thread of the cooperative pool.
///
/// One scan at a time, shared: a request that arrives while a scan runs waits for that scan's
/// answer instead of queueing another, so however many requests come, at most one scan runs
/// and none waits behind another.
public final class DeviceDiscovery: Sendable {
    private let executor: ThreadExecutor
    private let scan: @Sendable () -> [CameraDescription]
    /// The scan in progress. Set and cleared under the lock; the scan clears it when it ends.
    private let inFlight = LockedValue<Task<[CameraDescription], any Error>?>(nil)

    /// Discovery that scans with `V4L2Discovery.captureDevices`.
    public convenience init(logger: Logger) throws {
        try self.init { V4L2Discovery.captureDevices(logger: logger) }
    }

    /// Discovery that scans with `scan` (tests give their own).
    init(scan: @escaping @Sendable () -> [CameraDescription]) throws {
        executor = try ThreadExecutor(name: "shutter-devices")
        self.scan = scan
    }

    /// Every V4L2 capture device with its formats, sizes and rates.
    public func captureDevices() async throws -> [CameraDescription] {
        try await sharedScan().value
    }

    /// The scan in progress, or a new one if there is none.
    func sharedScan() -> Task<[CameraDescription], any Error> {
        inFlight.withLock { current in
            if let current { return current }
            let (executor, scan, inFlight) = (self.executor, self.scan, self.inFlight)
            let task = Task {
                defer { inFlight.withLock { $0 = nil } }
                return try await executor.run(scan)
            }
            current = task
            return task
        }
    }
}
