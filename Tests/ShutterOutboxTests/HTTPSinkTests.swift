import ShutterCatalog
import ShutterOutbox
import ShutterSystem
import ShutterTestSupport
import Testing

private let quietLogger = Logger(label: "shutter.outbox.test", level: .error)
private let jpeg: [UInt8] = [0xFF, 0xD8, 1, 2, 3, 0xFF, 0xD9]
private let jpegSHA256 = SHA256.hexDigest(jpeg)

private func pictureEvent(_ type: CatalogEventType, id: Int64 = 5, sha256: String = jpegSHA256)
    -> CatalogEvent
{
    let data =
        type == .pictureDeleted
        ? #"{"id":\#(id),"reason":"request","taken_at":"2026-12-02T04:10:00.123Z"}"#
        : #"{"id":\#(id),"taken_at":"2026-12-02T04:10:00.123Z","sha256":"\#(sha256)","label":"door","job_id":9}"#
    return CatalogEvent(id: 40, type: type, at: 0, data: data)
}

private let s3TestSettings = try! S3Settings(
    location: S3Location(url: "https://s3.example.net/pics/cam"), region: "eu-west-1",
    credentials: S3Credentials(
        accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"))

private func s3Sink(_ transport: RecordingHTTPTransport) throws -> S3Sink {
    let settings = S3Settings(
        location: try S3Location(url: "https://s3.example.net/pics/cam"), region: "eu-west-1",
        credentials: S3Credentials(
            accessKeyID: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"))
    return S3Sink(
        settings: settings, transport: transport, mediaPath: { "/media/\($0).jpg" }, logger: quietLogger)
}

@Suite struct S3SinkTests {
    @Test func anUploadIsSignedAndCarriesChecksumsAndMetadata() async throws {
        let transport = RecordingHTTPTransport()
        transport.setFile("/media/5.jpg", jpeg)
        let sink = try s3Sink(transport)
        try await sink.deliver(pictureEvent(.pictureCreated))
        let request = try #require(transport.requests.first)
        #expect(request.method == "PUT" && request.url == "https://s3.example.net/pics/cam/2026/12/02/5.jpg")
        #expect(request.body == jpeg)
        #expect(request.awsSignature?.curlProvider == "aws:amz:eu-west-1:s3")
        #expect(request.headers.contains("x-amz-content-sha256: \(jpegSHA256)"))
        #expect(request.headers.contains("x-amz-checksum-sha256: \(ByteText.base64(SHA256.digest(jpeg)))"))
        #expect(request.headers.contains("x-amz-meta-taken-at: 2026-12-02T04:10:00.123Z"))
        #expect(
            request.headers.contains("x-amz-meta-label: door")
                && request.headers.contains("x-amz-meta-job: 9"))
        #expect(sink.isConnected)
        // The secret is in the signing settings only, never in what is printed.
        #expect(!"\(request.awsSignature!)".contains("wJalr"))
    }

    @Test func aDeleteAcceptsNotFoundAndARefusalIsRetried() async throws {
        let transport = RecordingHTTPTransport()
        let sink = try s3Sink(transport)
        transport.answer(.success(HTTPTransferResponse(status: 404)))
        try await sink.deliver(pictureEvent(.pictureDeleted))
        #expect(transport.requests.last?.method == "DELETE")
        #expect(transport.requests.last?.url == "https://s3.example.net/pics/cam/2026/12/02/5.jpg")
        transport.answer(
            .success(
                HTTPTransferResponse(
                    status: 403, body: Array("<Error><Code>SignatureDoesNotMatch</Code></Error>".utf8))))
        await #expect(throws: DestinationRefusal(status: 403, detail: "SignatureDoesNotMatch")) {
            try await sink.deliver(pictureEvent(.pictureDeleted))
        }
        transport.answer(.failure(TransferError(code: 7, message: "Failed to connect")))
        await #expect(throws: TransferError.self) { try await sink.deliver(pictureEvent(.pictureDeleted)) }
        #expect(!sink.isConnected)
    }

    @Test func anAcknowledgedUploadIsReportedAndAnOffloadedPictureIsNotUploadedAgain() async throws {
        let transport = RecordingHTTPTransport()
        transport.setFile("/media/5.jpg", jpeg)
        let uploaded = LockedValue<[Int64]>([])
        let sink = S3Sink(
            settings: s3TestSettings, transport: transport, mediaPath: { "/media/\($0).jpg" },
            logger: quietLogger, onUploaded: { id in uploaded.withLock { $0.append(id) } })
        transport.answer(.success(HTTPTransferResponse(status: 500)))
        await #expect(throws: DestinationRefusal.self) {
            try await sink.deliver(pictureEvent(.pictureCreated))
        }
        #expect(uploaded.withLock { $0 }.isEmpty)
        try await sink.deliver(pictureEvent(.pictureCreated))
        #expect(uploaded.withLock { $0 } == [5])
        let offloaded = CatalogEvent(
            id: 41, type: .pictureUpdated, at: 0,
            data: #"{"id":5,"taken_at":"2026-12-02T04:10:00.123Z","sha256":"\#(jpegSHA256)","stored":["s3"]}"#
        )
        try await sink.deliver(offloaded)
        #expect(transport.requests.count == 2)
    }

    @Test func aPictureGoneOrNotMatchingItsRecordIsPassedOver() async throws {
        let transport = RecordingHTTPTransport()
        let sink = try s3Sink(transport)
        try await sink.deliver(pictureEvent(.pictureCreated))
        transport.setFile("/media/5.jpg", jpeg)
        try await sink.deliver(pictureEvent(.pictureCreated, sha256: String(repeating: "0", count: 64)))
        #expect(transport.requests.isEmpty)
    }
}

@Suite struct WebhookSinkTests {
    @Test func onlyA2xxIsDelivered() async throws {
        let transport = RecordingHTTPTransport()
        let sink = WebhookSink(
            settings: WebhookSettings(url: "https://h.example/x"), transport: transport,
            mediaPath: { "/m/\($0).jpg" })
        #expect(sink.name.hasPrefix("webhook:"))
        transport.answer(.success(HTTPTransferResponse(status: 503, body: Array("busy".utf8))))
        await #expect(throws: DestinationRefusal(status: 503, detail: "busy")) {
            try await sink.deliver(pictureEvent(.pictureCreated))
        }
        #expect(sink.isConnected)
        transport.answer(.success(HTTPTransferResponse(status: 204)))
        try await sink.deliver(pictureEvent(.pictureCreated))
        #expect(transport.requests.count == 2)
    }

    @Test func includeJPEGSendsThePictureWhileItIsThereAndTheJSONAfter() async throws {
        let transport = RecordingHTTPTransport()
        let sink = WebhookSink(
            settings: WebhookSettings(url: "https://h.example/x", includeJPEG: true), transport: transport,
            mediaPath: { "/m/\($0).jpg" })
        transport.setFile("/m/5.jpg", jpeg)
        try await sink.deliver(pictureEvent(.pictureCreated))
        try await sink.deliver(pictureEvent(.pictureCreated, id: 6))
        try await sink.deliver(pictureEvent(.pictureDeleted))
        let types = transport.requests.map { $0.headers.first { $0.hasPrefix("Content-Type") } ?? "" }
        #expect(types[0].hasPrefix("Content-Type: multipart/form-data; boundary=shutter-"))
        #expect(types[1] == "Content-Type: application/json" && types[2] == "Content-Type: application/json")
        #expect(transport.requests[0].body.count > jpeg.count)
    }
}

@Suite struct S3CredentialsTests {
    @Test func theDefaultProfileOfASharedCredentialsFile() {
        let file = """
            # keys
            [other]
            aws_access_key_id = AKIAOTHER
            aws_secret_access_key = other
            [default]
            aws_access_key_id=AKIADEFAULT
              aws_secret_access_key =  s/ecr+et  \r
            """
        #expect(
            S3Credentials.parse(credentialsFile: file)
                == S3Credentials(accessKeyID: "AKIADEFAULT", secretAccessKey: "s/ecr+et"))
        #expect(S3Credentials.parse(credentialsFile: "[default]\naws_access_key_id = A\n") == nil)
        #expect(
            S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "A", "AWS_SECRET_ACCESS_KEY": "S"])
                == S3Credentials(accessKeyID: "A", secretAccessKey: "S"))
        #expect(S3Credentials.fromEnvironment(["AWS_ACCESS_KEY_ID": "A"]) == nil)
        #expect(!"\(S3Credentials(accessKeyID: "A", secretAccessKey: "S3CRET"))".contains("S3CRET"))
    }
}
