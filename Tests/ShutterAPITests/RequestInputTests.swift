import ShutterHTTP
import ShutterTestSupport
import Testing

@testable import ShutterAPI

private func body(_ text: String) -> [UInt8] { Array(text.utf8) }

/// The 400 a request is refused with, or nil if it was accepted.
private func refusal(_ parse: () throws -> Void) -> HTTPError? {
    do {
        try parse()
        return nil
    } catch let error as HTTPError {
        return error
    } catch {
        Issue.record("unexpected error \(error)")
        return nil
    }
}

/// Bodies and queries that say two things, or say a number in a form nobody means, are refused
/// by name rather than read one way silently.
@Suite struct RequestInputTests {
    @Test func aSnapBodyGivingAFieldTwiceIsRefusedByName() {
        let request = HTTPRequest(method: .post, target: "/snap", body: body(#"{"delay":5,"delay":-1}"#))
        let error = refusal { _ = try SnapOptions(request) }
        #expect(error?.status == .badRequest)
        #expect(error?.error == "duplicate field")
        #expect(error?.detail.contains("`delay`") == true)
    }

    @Test func aPatchBodyGivingKeepTwiceIsRefused() {
        let error = refusal { _ = try PicturePatch.decodeKeep(body(#"{"keep":true,"keep":false}"#)) }
        #expect(error?.status == .badRequest)
        #expect(error?.detail.contains("`keep`") == true)
    }

    @Test func cameraControlsGivenTwiceAreRefused() {
        let error = refusal {
            _ = try CameraRoutes.decodeControlValues(body(#"{"brightness":10,"contrast":1,"brightness":90}"#))
        }
        #expect(error?.status == .badRequest)
        #expect(error?.detail.contains("`brightness`") == true)
        #expect(refusal { _ = try CameraRoutes.decodeControlValues(body(#"{"brightness":10}"#)) } == nil)
    }

    @Test func aLinkBodyGivingAFieldTwiceIsRefused() async throws {
        try await withTemporaryDirectory { directory in
            let api = try TestAPI(directory: directory)
            // Which expiry would be signed depends on the decoder; the client must say one.
            let refused = await api.respond(
                .post, "/links",
                body: body(#"{"path":"/media/7.jpg","expires_in":60,"expires_in":31622400}"#))
            #expect(refused.status == .badRequest)
            #expect(refused.text.contains("duplicate field"))
            #expect(refused.text.contains("`expires_in`"))
        }
    }

    @Test(arguments: ["0x5", "0x1p3", "inf", "-inf", "nan", "infinity", "1e1", "5.", ".5", "", "+5", " 5"])
    func queryNumbersAreDecimalOnly(_ text: String) {
        let snap = HTTPRequest(method: .post, target: "/snap?delay=\(text)")
        #expect(refusal { _ = try SnapOptions(snap) }?.status == .badRequest)
        let preview = HTTPRequest(method: .get, target: "/preview.mjpg?fps=\(text)")
        #expect(
            refusal {
                _ = try QueryParameters(preview, allowed: ["fps"]).number("fps", in: 0...1000)
            }?.status == .badRequest)
    }

    @Test(arguments: ["+5", "5.0", "0x5", "", "-", "1e1"])
    func queryIntegersAreDecimalOnly(_ text: String) {
        let request = HTTPRequest(method: .get, target: "/library?limit=\(text)")
        #expect(
            refusal { _ = try QueryParameters(request, allowed: ["limit"]).integer("limit", in: 1...500) }?
                .status
                == .badRequest)
    }

    @Test func decimalQueryNumbersAreRead() throws {
        let options = try SnapOptions(HTTPRequest(method: .post, target: "/snap?delay=2.5"))
        #expect(options.delaySeconds == 2.5)
        let query = try QueryParameters(HTTPRequest(method: .get, target: "/x?fps=12"), allowed: ["fps"])
        #expect(try query.number("fps", in: 0...30) == 12)
    }

    @Test func anUndecodableParameterNameIsRefusedLikeAnUnknownOne() {
        let request = HTTPRequest(method: .get, target: "/status?%ff=1")
        let error = refusal { _ = try QueryParameters(request, allowed: []) }
        #expect(error?.status == .badRequest)
        #expect(error?.error == "unknown parameter")
        let malformed = refusal {
            _ = try QueryParameters(HTTPRequest(method: .get, target: "/x?a%=1"), allowed: ["a"])
        }
        #expect(malformed?.status == .badRequest)
    }

    @Test func anUndecodableValueIsRefused() {
        let request = HTTPRequest(method: .get, target: "/library?limit=%ff")
        let error = refusal { _ = try QueryParameters(request, allowed: ["limit"]) }
        #expect(error?.status == .badRequest)
        #expect(error?.detail.contains("limit") == true)
    }
}
