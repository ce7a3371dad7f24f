import ShutterOutbox
import Testing

@Suite struct S3LocationTests {
    @Test func pathStyleKeysCarryThePrefixAndTheUTCDate() throws {
        let location = try S3Location(url: "https://s3.example.net/pictures/cam1/stills/")
        #expect(
            location.host == "s3.example.net" && location.bucket == "pictures"
                && location.prefix == "cam1/stills")
        let key = try #require(location.objectKey(pictureID: 42, takenAt: "2026-12-02T04:10:00.123Z"))
        #expect(key == "cam1/stills/2026/12/02/42.jpg")
        #expect(
            location.objectURL(key: key) == "https://s3.example.net/pictures/cam1/stills/2026/12/02/42.jpg")
    }

    @Test func virtualHostStyleMovesTheBucketIntoTheHost() throws {
        let location = try S3Location(
            url: "https://s3.eu-west-1.amazonaws.com/pictures", addressing: .virtual)
        let key = try #require(location.objectKey(pictureID: 7, takenAt: "2027-01-31T23:59:59.999Z"))
        #expect(key == "2027/01/31/7.jpg")
        #expect(
            location.objectURL(key: key) == "https://pictures.s3.eu-west-1.amazonaws.com/2027/01/31/7.jpg")
    }

    @Test func aPortAndLoopbackHTTPAreKept() throws {
        let location = try S3Location(url: "http://127.0.0.1:9000/bucket/p")
        #expect(location.objectURL(key: "p/k") == "http://127.0.0.1:9000/bucket/p/k")
        #expect(location.description == "http://127.0.0.1:9000/bucket/p")
        _ = try S3Location(url: "http://localhost:9000/bucket")
        _ = try S3Location(url: "http://[::1]:9000/bucket")
    }

    @Test func unusableURLsAreRefusedWithTheReason() {
        let refused: [(String, S3Location.Addressing, String)] = [
            ("s3.example.net/bucket", .path, "must start with https://"),
            ("ftp://s3.example.net/bucket", .path, "must start with https://"),
            ("https://s3.example.net", .path, "has no bucket"),
            ("https://s3.example.net/", .path, "has no bucket"),
            ("http://s3.example.net/bucket", .path, "only for a loopback host"),
            ("https://s3.example.net/Bucket_Name", .path, "is not a bucket name"),
            ("https://s3.example.net/ab", .path, "is not a bucket name"),
            ("https://s3.example.net/bucket/a b", .path, "the prefix may hold only"),
            ("https://s3.example.net/bucket/caf%C3%A9", .path, "the prefix may hold only"),
            ("https://s3.example.net/my.bucket", .virtual, "does not match the store's certificate"),
            ("https://user:pw@s3.example.net/bucket", .path, "has no host"),
        ]
        for (url, addressing, words) in refused {
            #expect {
                _ = try S3Location(url: url, addressing: addressing)
            } throws: { error in
                (error as? S3LocationError)?.description.contains(words) == true
            }
        }
    }

    @Test func aTakenAtThatIsNotADateNamesNoKey() throws {
        let location = try S3Location(url: "https://s3.example.net/bucket")
        #expect(location.objectKey(pictureID: 1, takenAt: "") == nil)
        #expect(location.objectKey(pictureID: 1, takenAt: "2026/12/02") == nil)
        #expect(location.objectKey(pictureID: 1, takenAt: "20x6-12-02T00:00:00Z") == nil)
    }
}
