import ShutterCamera
import ShutterCapture
import ShutterCatalog
import ShutterHTTP
import ShutterJobs
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterAPI

/// Each domain error's answer, decided in one place (`ErrorResponses.swift`).
@Suite struct ErrorResponsesTests {
    private func answer(_ error: any HTTPResponseError) -> (status: Int, body: String, headers: HTTPHeaders) {
        let response = error.response()
        return (response.status.code, response.text, response.headers)
    }

    @Test func everyCaptureFailureIsA503ToRetry() {
        let failures: [CaptureError] = [
            .timedOut(milliseconds: 3000), .cameraUnavailable(.disconnected("/dev/video0"), camera: "cam"),
            .encodingFailed(JPEGError(call: "tjCompress2", message: "bad"), camera: "cam"), .stopped,
        ]
        for failure in failures {
            let (status, body, headers) = answer(failure)
            #expect(status == 503)
            #expect(headers["Retry-After"] == "1")
            #expect(body.contains(#""error":"camera unavailable""#))
        }
        #expect(answer(failures[1]).body.contains("camera cam: camera disconnected: /dev/video0"))
    }

    @Test func aFullDiskIsA507AndABadArgumentA400() {
        let full = answer(CatalogError.storageFull(SystemError(errno: 28, call: "write")))
        #expect(full.status == 507)
        #expect(full.body.contains("nothing was stored") && full.body.contains("No space left on device"))
        #expect(answer(CatalogError.invalidArgument("limit 0 is below 1")).status == 400)
    }

    @Test func anInternalCatalogFailureIsA500ThatNamesNoFileOrSQL() {
        let database = CatalogError.database(
            DatabaseError(
                extendedResultCode: 11, message: "database disk image is malformed", sql: "SELECT secret"))
        let (status, body, _) = answer(database)
        #expect(status == 500)
        #expect(!body.contains("secret") && !body.contains("malformed"))
        #expect(
            answer(CatalogError.io(SystemError(errno: 5, call: "fsync /data/media/7.jpg"))).body.contains(
                "/data") == false)
    }

    @Test func jobSpecsAreRefusedWith400AndTooManyJobsWith409() {
        #expect(answer(JobSpecError.unknownField("colour")).status == 400)
        let tooMany = answer(JobSpecError.tooManyActiveJobs(limit: 2))
        #expect(tooMany.status == 409 && tooMany.body.contains("at most 2"))
    }

    @Test func aRefusedControlIsA400AndAFailingDeviceA500() {
        let refused = answer(CameraError.invalidControl("brightness: 300 is outside -64...64"))
        #expect(refused.status == 400 && refused.body.contains("brightness"))
        #expect(answer(CameraError.device(SystemError(errno: 5, call: "VIDIOC_S_CTRL"))).status == 500)
    }

    @Test(arguments: [
        (ShotFailure.Kind.cameraUnavailable, 503), (.storageFull, 507), (.failed, 500),
    ])
    func aDelayedSnapWithoutItsPictureAnswersByTheKindOfFailure(kind: ShotFailure.Kind, status: Int) {
        let (code, body, _) = answer(JobShotError(jobID: 7, failure: ShotFailure(kind, "disk on fire")))
        #expect(code == status)
        #expect(body.contains("job 7"))
        // Only a failure the client can act on is described.
        #expect(body.contains("disk on fire") == (kind != .failed))
    }

    @Test(arguments: ["0", "007", "+7", "-7", "7x", "", "99999999999999999999"])
    func onlyAPositiveDecimalIsAnID(text: String) {
        #expect(throws: HTTPError.self) { try RouteParameters(["id": text]).positiveID(of: "picture") }
    }

    @Test func anIDIsParsed() throws {
        #expect(try RouteParameters(["id": "42"]).positiveID(of: "job") == 42)
        #expect {
            try RouteParameters(["id": "x"]).positiveID(of: "job")
        } throws: { error in
            let error = error as? HTTPError
            return error?.status == .notFound && error?.detail.contains("no job with id 'x'") == true
        }
    }
}
