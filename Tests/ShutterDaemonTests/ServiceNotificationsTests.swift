import ShutterCapture
import ShutterSystem
import Testing

@testable import ShutterDaemon

@Suite struct ServiceNotificationsTests {
    typealias Snapshot = ServiceNotifications.Snapshot
    let start = MonotonicInstant(nanoseconds: 1_000_000_000)
    let second: UInt64 = 1_000_000_000

    private func snapshot(_ phase: CapturePhase, frames: UInt64 = 0, viewers: Int = 0, failure: String? = nil)
        -> Snapshot
    {
        Snapshot(
            phase: phase, framesCaptured: frames, width: 1280, height: 720, fps: 30, viewers: viewers,
            failure: failure)
    }

    @Test func readyOnlyOnceTheCameraHasAFrameOrIsFoundMissing() {
        var notifications = ServiceNotifications(watchdogIntervalNanoseconds: nil)
        #expect(notifications.messages(for: snapshot(.opening), now: start) == ["STATUS=opening the camera"])
        #expect(
            notifications.messages(for: snapshot(.streaming), now: start) == [
                "STATUS=streaming 1280x720 at 30 fps, 0 viewers"
            ])
        #expect(notifications.messages(for: snapshot(.streaming, frames: 1), now: start) == ["READY=1"])
        #expect(notifications.messages(for: snapshot(.streaming, frames: 9), now: start) == [])
        #expect(
            notifications.messages(for: snapshot(.streaming, frames: 9, viewers: 1), now: start) == [
                "STATUS=streaming 1280x720 at 30 fps, 1 viewer"
            ])
        var missing = ServiceNotifications(watchdogIntervalNanoseconds: nil)
        #expect(
            missing.messages(
                for: snapshot(.failed, failure: "camera /dev/video0: no such device"), now: start)
                == ["READY=1\nSTATUS=camera gone, reopening: camera /dev/video0: no such device"])
    }

    @Test func theWatchdogIsFedEveryIntervalOnlyWhileFramesArriveOrTheThreadWaits() {
        var notifications = ServiceNotifications(watchdogIntervalNanoseconds: 5 * second)
        _ = notifications.messages(for: snapshot(.streaming, frames: 1), now: start)
        // Not again before the interval.
        #expect(
            !notifications.messages(
                for: snapshot(.streaming, frames: 50), now: start.advanced(by: 4 * second)
            ).contains("WATCHDOG=1"))
        #expect(
            notifications.messages(
                for: snapshot(.streaming, frames: 150), now: start.advanced(by: 5 * second)) == ["WATCHDOG=1"]
        )
        // A whole interval without a frame while streaming: the capture thread is wedged.
        #expect(
            notifications.messages(
                for: snapshot(.streaming, frames: 150), now: start.advanced(by: 10 * second)) == [])
        #expect(notifications.isWithholdingWatchdog)
        // Frames again: fed again.
        #expect(
            notifications.messages(
                for: snapshot(.streaming, frames: 151), now: start.advanced(by: 15 * second)) == [
                    "WATCHDOG=1"
                ])
        #expect(!notifications.isWithholdingWatchdog)
        // Waiting to reopen or idle is healthy, frames or not.
        let failed = notifications.messages(
            for: snapshot(.failed, frames: 151), now: start.advanced(by: 20 * second))
        #expect(failed.contains("WATCHDOG=1"))
        #expect(
            notifications.messages(for: snapshot(.idle, frames: 151), now: start.advanced(by: 25 * second))
                .contains("WATCHDOG=1"))
        // Stuck opening the device for an interval is not.
        _ = notifications.messages(for: snapshot(.opening, frames: 151), now: start.advanced(by: 30 * second))
        #expect(
            !notifications.messages(
                for: snapshot(.opening, frames: 151), now: start.advanced(by: 35 * second)
            ).contains("WATCHDOG=1"))
    }

    @Test func theWatchdogIntervalIsHalfOfWatchdogUsecForThisProcessOnly() {
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "30000000"], pid: 7) == 15_000_000_000)
        #expect(
            SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "7"], pid: 7)
                == 15_000_000_000)
        #expect(
            SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "8"], pid: 7)
                == nil)
        #expect(SystemdNotifier.watchdogInterval(["WATCHDOG_USEC": "0"], pid: 7) == nil)
        #expect(SystemdNotifier.watchdogInterval([:], pid: 7) == nil)
    }
}
