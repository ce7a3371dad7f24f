import ShutterSystem

/// Lists the V4L2 capture devices for `/cameras` on a thread of its own: opening each node and
/// asking it is blocking I/O (a USB camera can take tens of milliseconds to answer), which must
/// not hold a thread of the cooperative pool. One thread, so a flood of requests queues here
/// instead of opening devices in parallel.
public final class DeviceDiscovery: Sendable {
    private let executor: ThreadExecutor
    private let logger: Logger

    public init(logger: Logger) throws {
        executor = try ThreadExecutor(name: "shutter-devices")
        self.logger = logger
    }

    /// Every V4L2 capture device with its formats, sizes and rates.
    public func captureDevices() async throws -> [CameraDescription] {
        let logger = self.logger
        return try await executor.run { V4L2Discovery.captureDevices(logger: logger) }
    }
}
