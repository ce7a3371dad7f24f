import ShutterOutbox
import ShutterSystem
import Testing

@Suite struct S3PresignerTests {
    /// The example of "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)"
    /// in the Amazon S3 API reference: examplebucket's test.txt, 2013-05-24, valid 86400 s.
    @Test func awsPublishedExample() throws {
        let location = try S3Location(url: "https://s3.amazonaws.com/examplebucket", addressing: .virtual)
        let url = S3Presigner.presignedGetURL(
            key: "test.txt", location: location, region: "us-east-1",
            credentials: S3Credentials(
                accessKeyID: "AKIAIOSFODNN7EXAMPLE",
                secretAccessKey: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
            nowSecondsSince1970: Timestamp.daysSince1970(year: 2013, month: 5, day: 24) * 86_400,
            expiresInSeconds: 86_400)
        #expect(
            url
                == "https://examplebucket.s3.amazonaws.com/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host&X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404"
        )
    }

    @Test func pathStyleSignsTheBucketInThePathAndClampsTheLifetime() throws {
        let location = try S3Location(url: "http://127.0.0.1:9000/pics")
        let url = S3Presigner.presignedGetURL(
            key: "p/2026/12/02/5.jpg", location: location, region: "us-east-1",
            credentials: S3Credentials(accessKeyID: "A", secretAccessKey: "S"),
            nowSecondsSince1970: 1_796_184_601,
            expiresInSeconds: 10_000_000)
        #expect(
            url.hasPrefix(
                "http://127.0.0.1:9000/pics/p/2026/12/02/5.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=A%2F20261202%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20261202T041001Z&X-Amz-Expires=604800&"
            ))
    }
}
