// Fuzzes the JSON bodies the API reads: POST /snap's options (SnapOptions), POST /jobs's job
// spec (JobSpec.parse), PATCH /library/{id} (PicturePatch), PATCH /camera/controls
// (CameraRoutes.decodeControlValues), and the duplicate-key check they share.
//
// Each input is given to all four. Each parses or throws its typed error (a 400 for the API's);
// what parses is within the limits its documentation states.
import FuzzSupport
import ShutterHTTP
import ShutterJobs

@testable import ShutterAPI

func expectBadRequest(_ body: () throws -> Void) {
    do {
        try body()
    } catch let error as HTTPError {
        invariant(error.status == .badRequest, "refused with \(error.status): \(error.detail)")
    } catch {
        invariant(false, "refused with \(error), not an HTTPError")
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = fuzzInput(start, count)
    expectBadRequest {
        let options = try SnapOptions(HTTPRequest(method: .post, target: "/snap", body: bytes))
        if let label = options.label {
            invariant(label.utf8.count <= SnapOptions.maximumLabelBytes, "label of \(label.utf8.count) bytes")
        }
        if let delay = options.delaySeconds { invariant(delay.isFinite && delay >= 0, "delay \(delay)") }
        if let maxAge = options.maxAgeMilliseconds {
            invariant((0...60000).contains(maxAge), "max_age_ms \(maxAge)")
        }
    }
    do {
        _ = try JobSpec.parse(json: bytes)
    } catch {
        invariant(!error.description.isEmpty, "a job spec error without a description")
    }
    expectBadRequest { _ = try PicturePatch.decodeKeep(bytes) }
    expectBadRequest {
        let values = try CameraRoutes.decodeControlValues(bytes)
        invariant(!values.isEmpty, "no control values from a body that parsed")
    }
    return 0
}

runLibFuzzer(testOneInput)
