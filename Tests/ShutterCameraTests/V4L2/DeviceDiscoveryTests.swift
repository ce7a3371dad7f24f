import ShutterSystem
import Synchronization
import Testing

@testable import ShutterCamera

/// `/cameras`' scans: off the pool, and one at a time however many requests come.
@Suite(.timeLimit(.minutes(1))) struct DeviceDiscoveryTests {
    private static let camera = CameraDescription(
        path: "/dev/video0", driver: "uvcvideo", card: "Test", busInfo: "usb-1", formats: [])

    /// A scan that holds its thread until released, counting how often it ran and where.
    private final class HeldScan: Sendable {
        let release = ThreadWakeup()
        let runs = Atomic<Int>(0)
        let thread = LockedValue<String>("")

        func run() -> [CameraDescription] {
            runs.add(1, ordering: .relaxed)
            thread.withLock { $0 = OSThread.currentName }
            _ = release.wait(untilMonotonic: nil)
            return [DeviceDiscoveryTests.camera]
        }
    }

    @Test func requestsDuringAScanShareItAndAScanRunsOnItsOwnThread() async throws {
        let scan = HeldScan()
        let discovery = try DeviceDiscovery { scan.run() }
        let first = discovery.sharedScan()
        // Nine more while it runs: the same scan, not nine queued behind it.
        let others = (0..<9).map { _ in discovery.sharedScan() }
        #expect(others.allSatisfy { $0 == first })
        scan.release.signal()
        for task in [first] + others { #expect(try await task.value == [Self.camera]) }
        #expect(scan.runs.load(ordering: .relaxed) == 1)
        #expect(scan.thread.withLock { $0 } == "shutter-devices")
        // Once it has ended, the next request scans afresh.
        scan.release.signal()
        #expect(try await discovery.captureDevices() == [Self.camera])
        #expect(scan.runs.load(ordering: .relaxed) == 2)
    }
}
