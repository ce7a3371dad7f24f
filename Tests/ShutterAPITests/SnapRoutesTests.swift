import FoundationEssentials
import ShutterCamera
import ShutterCapture
import ShutterHTTP
import ShutterTestSupport
import Testing

@testable import ShutterAPI

/// `POST /snap` with a delay: a delayed job, answered at once or, with `wait`, with its picture.
@Suite(.timeLimit(.minutes(1))) struct SnapRoutesTests {
    @Test func withoutWaitTheJobIsAnsweredAtOnce() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            try await api.jobs.start()
            let response = await api.respond(.post, "/snap?delay=5")
            #expect(response.status == .accepted)
            #expect(response.headers["Location"] == "/jobs/1")
            #expect(response.text.contains(#""kind":"delayed""#) && response.text.contains(#""delay":5"#))
            await api.jobs.stop()
        }
    }

    @Test func withWaitThePictureIsAnsweredOnceTaken() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            try await api.jobs.start()
            let answer = Task {
                await api.respond(.post, "/snap", body: Array(#"{"delay": 2, "wait": true}"#.utf8))
            }
            // The runner asleep until the shot is due.
            await api.clock.sleepers(atLeast: 1)
            api.clock.advance(by: 2_000_000_000)
            let response = await answer.value
            #expect(response.status == .created)
            #expect(response.headers["Location"] == "/library/1")
            #expect(response.text.contains(#""job_id":1"#))
            await api.jobs.stop()
        }
    }

    /// Answered by the kind of the job's last failure: the camera's is a 503 to retry.
    @Test func withWaitACameraFailureIsA503NamingTheJob() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            api.jobCamera.fail(with: .cameraUnavailable(.disconnected("/dev/video0"), camera: "cam"))
            try await api.jobs.start()
            let answer = Task { await api.respond(.post, "/snap?delay=1&wait=true") }
            await api.clock.sleepers(atLeast: 1)
            api.clock.advance(by: 1_000_000_000)
            let response = await answer.value
            #expect(response.status == .serviceUnavailable)
            #expect(response.headers["Retry-After"] == "1")
            #expect(response.text.contains("job 1") && response.text.contains("/dev/video0"))
            await api.jobs.stop()
        }
    }

    /// Snaps waiting for a frame hold their places: the one past `max_pending_snaps` is a 503 at
    /// once, without waiting, and a place freed is taken again.
    @Test func pastTheLimitOfSnapsInProgressA503ToRetry() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory, maxPendingSnaps: 2)
            // The capture service is never started: each snap waits for a frame until its timeout.
            let waiting = (0..<2).map { _ in Task { await api.respond(.post, "/snap") } }
            await api.clock.sleepers(atLeast: 2)
            let refused = await api.respond(.post, "/snap")
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.headers["Retry-After"] == "1")
            #expect(refused.text.contains("too busy") && refused.text.contains("2 snaps are in progress"))
            #expect(api.api.snapResults.count(of: .busy) == 1)
            #expect(api.api.snapAdmission.count == 2)
            // Their frames never come: the timeout answers both (the camera's 503), and frees the places.
            api.clock.advance(by: 100_000_000)
            for snap in waiting { #expect(await snap.value.text.contains("camera unavailable")) }
            #expect(api.api.snapAdmission.count == 0)
            let again = Task { await api.respond(.post, "/snap") }
            await api.clock.sleepers(atLeast: 1)
            #expect(api.api.snapAdmission.count == 1)
            api.clock.advance(by: 100_000_000)
            #expect(await again.value.text.contains("camera unavailable"))
            #expect(api.api.snapResults.count(of: .busy) == 1)
        }
    }

    /// One client address gets a quarter of the places, so a client flooding snaps leaves room
    /// for the others.
    @Test func oneAddressGetsAQuarterOfThePlaces() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory, maxPendingSnaps: 8)
            let flooder = PeerAddress(host: "192.0.2.7", isLoopback: false)
            let honest = PeerAddress(host: "192.0.2.8", isLoopback: false)
            let waiting = (0..<2).map { _ in Task { await api.respond(.post, "/snap", peer: flooder) } }
            await api.clock.sleepers(atLeast: 2)
            let refused = await api.respond(.post, "/snap", peer: flooder)
            #expect(refused.status == .serviceUnavailable)
            #expect(refused.headers["Retry-After"] == "1")
            #expect(refused.text.contains("2 snaps from this address are in progress"))
            // Another address is let in.
            let other = Task { await api.respond(.post, "/snap", peer: honest) }
            await api.clock.sleepers(atLeast: 3)
            #expect(api.api.snapAdmission.count == 3)
            api.clock.advance(by: 100_000_000)
            for snap in waiting + [other] { #expect(await snap.value.text.contains("camera unavailable")) }
            // The flooder's places are free again.
            #expect(api.api.snapAdmission.count == 0)
            let again = Task { await api.respond(.post, "/snap", peer: flooder) }
            await api.clock.sleepers(atLeast: 1)
            #expect(api.api.snapAdmission.count == 1)
            api.clock.advance(by: 100_000_000)
            _ = await again.value
        }
    }
}
