import Testing

@testable import ShutterCatalog

@Suite struct MediaDirectoryTests {
    @Test(arguments: [
        ("1.jpg", MediaDirectory.EntryKind.media(1)),
        ("9223372036854775807.jpg", .media(.max)),
        ("9223372036854775808.jpg", .other),
        ("0.jpg", .other),
        ("-1.jpg", .other),
        ("+1.jpg", .other),
        ("01.jpg", .other),
        (".jpg", .other),
        ("1.jpeg", .other),
        ("1.JPG", .other),
        ("catalog.sqlite", .other),
        (".12.jpg.tmp", .temporary(12)),
        (".x.jpg.tmp", .temporary(nil)),
        (".tmp", .other),
        ("..tmp", .temporary(nil)),
        (".", .other),
        ("..", .other),
    ])
    func namesAreClassifiedStrictly(name: String, kind: MediaDirectory.EntryKind) {
        #expect(MediaDirectory.classify(name) == kind)
    }

    @Test func pathsAreBuiltFromIDsOnly() {
        let files = MediaDirectory(path: "/data/media")
        #expect(files.filePath(id: 42) == "/data/media/42.jpg")
        #expect(files.temporaryPath(id: 42) == "/data/media/.42.jpg.tmp")
    }
}
