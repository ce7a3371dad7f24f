import ShutterCatalog
import ShutterOutbox
import Testing

@Suite struct WebhookRequestTests {
    private let created = CatalogEvent(
        id: 12, type: .pictureCreated, at: 1_796_184_600_123,
        data: #"{"id":3,"taken_at":"2026-12-02T04:10:00.123Z","sha256":"ab","label":null,"job_id":null}"#)

    @Test func theBodyIsTheEventWithItsIdTypeAndTime() {
        let request = WebhookRequest.make(
            created, settings: WebhookSettings(url: "https://hooks.example.net/x"), jpeg: nil, boundary: "b")
        #expect(request.method == "POST" && request.url == "https://hooks.example.net/x")
        #expect(
            String(decoding: request.body, as: UTF8.self)
                == #"{"id":12,"type":"picture.created","at":"2026-12-02T04:10:00.123Z","data":\#(created.data)}"#
        )
        #expect(request.headers.contains("Content-Type: application/json"))
        #expect(request.headers.contains("X-Shutter-Event-Id: 12"))
        #expect(!request.headers.contains { $0.hasPrefix("X-Shutter-Signature") })
        #expect(request.timeoutMilliseconds == 10_000)
    }

    @Test func theSignatureIsHMACSHA256OfTheBody() {
        // RFC 4231, test case 2.
        #expect(
            WebhookRequest.signature(body: Array("what do ya want for nothing?".utf8), secret: "Jefe")
                == "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        let request = WebhookRequest.make(
            created, settings: WebhookSettings(url: "https://h.example/x", secret: "s"), jpeg: [1, 2],
            boundary: "B")
        #expect(
            request.headers.contains(
                "X-Shutter-Signature: \(WebhookRequest.signature(body: request.body, secret: "s"))"))
    }

    @Test func aPictureGoesAsMultipartWithTheJSONFirst() {
        let jpeg: [UInt8] = [0xFF, 0xD8, 0x0D, 0x0A, 0x2D, 0x2D, 0xFF, 0xD9]
        let request = WebhookRequest.make(
            created, settings: WebhookSettings(url: "https://h.example/x", includeJPEG: true), jpeg: jpeg,
            boundary: "shutter-b0")
        #expect(request.headers.contains("Content-Type: multipart/form-data; boundary=shutter-b0"))
        let json = OutboxMessage.json(created)
        let expected =
            Array(
                "--shutter-b0\r\nContent-Disposition: form-data; name=\"event\"\r\nContent-Type: application/json\r\n\r\n\(json)\r\n--shutter-b0\r\nContent-Disposition: form-data; name=\"picture\"; filename=\"3.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n"
                    .utf8) + jpeg + Array("\r\n--shutter-b0--\r\n".utf8)
        #expect(request.body == expected)
    }

    @Test func theSinkNameIsStableAndHidesTheURL() {
        let hook = WebhookSettings(url: "https://h.example/x?token=secret")
        #expect(
            hook.sinkName
                == WebhookSettings(url: "https://h.example/x?token=secret", secret: "other").sinkName)
        #expect(hook.sinkName != WebhookSettings(url: "https://h.example/y").sinkName)
        #expect(
            hook.sinkName.hasPrefix("webhook:") && hook.sinkName.count == 20
                && !hook.sinkName.contains("secret"))
    }

    @Test func base64AndHexFollowRFC4648() {
        let vectors = [
            "": "", "f": "Zg==", "fo": "Zm8=", "foo": "Zm9v", "foob": "Zm9vYg==", "fooba": "Zm9vYmE=",
            "foobar": "Zm9vYmFy",
        ]
        for (plain, encoded) in vectors { #expect(ByteText.base64(Array(plain.utf8)) == encoded) }
        #expect(ByteText.bytes(hex: "00fFa1") == [0, 255, 161])
        #expect(ByteText.bytes(hex: "0") == nil && ByteText.bytes(hex: "zz") == nil)
        #expect(ByteText.headerSafe("front door é%\n") == "front door %C3%A9%25%0A")
    }
}
