import ShutterHTTP
import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterAccess

#if canImport(Glibc)
    import Glibc
#endif

@Suite struct SignedLinksTests {
    /// The target logged for a signed request shows no signature: every `sig=` pair of the query,
    /// split by bytes, as the server reads it. Found by fuzz/FuzzAccess: with a combining mark
    /// after an `&`, a `Character` split joins two pairs, so checks must split as this does.
    @Test func theLoggedTargetShowsNoSignatureWhateverFollowsAnAmpersand() {
        #expect(
            SignedLinks.redactingSignature("/media/1.jpg?exp=9&sig=SECRET&\u{30E}x=1&sig=AGAIN")
                == "/media/1.jpg?exp=9&sig=-&\u{30E}x=1&sig=-")
        #expect(SignedLinks.redactingSignature("/media/1.jpg?sig=&sig") == "/media/1.jpg?sig=-&sig")
        // The query starts at the first "?" byte, whatever follows it (FuzzAccess: a combining
        // mark after it); a later "?sig" is the name "?sig", as the server reads it.
        #expect(
            SignedLinks.redactingSignature("/media/1.jpg?\u{30E}&&?sig=X&sig=SECRET")
                == "/media/1.jpg?\u{30E}&&?sig=X&sig=-")
        #expect(SignedLinks.redactingSignature("/media/1.jpg") == "/media/1.jpg")
    }

    let links = SignedLinks(key: Array(repeating: 7, count: 32))
    let now: Int64 = 1_800_000_000

    private func check(_ target: String, path: String? = nil) -> SignedLinks.Check {
        let request = HTTPRequest(method: .get, target: target)
        return links.check(request, path: path ?? request.path!, nowSeconds: now)
    }

    @Test func aLinkIsValidForItsPathUntilItExpires() {
        let link = links.link(path: "/media/12.jpg", expiresAt: now + 60)
        #expect(check(link) == .valid(target: "/media/12.jpg", expiresAt: now + 60))
        #expect(check(link + "&width=320") == .valid(target: "/media/12.jpg?width=320", expiresAt: now + 60))
        let expiredLink = links.link(path: "/media/12.jpg", expiresAt: now - 1)
        #expect(check(expiredLink) == .expired)
    }

    @Test func anotherPathATamperedExpiryOrAnotherKeyIsRefused() {
        let link = links.link(path: "/media/12.jpg", expiresAt: now + 60)
        let otherPath = link.replacing("/media/12.jpg", with: "/media/13.jpg")
        guard case .invalid = check(otherPath) else {
            Issue.record("another path was accepted")
            return
        }
        let laterExpiry = link.replacing("exp=\(now + 60)", with: "exp=\(now + 6000)")
        guard case .invalid = check(laterExpiry) else {
            Issue.record("a tampered expiry was accepted")
            return
        }
        let otherKey = SignedLinks(key: Array(repeating: 8, count: 32)).link(
            path: "/media/12.jpg", expiresAt: now + 60)
        guard case .invalid = check(otherKey) else {
            Issue.record("another key's link was accepted")
            return
        }
        guard case .invalid = check("/media/12.jpg?exp=\(now + 60)") else {
            Issue.record("an expiry without a signature was accepted")
            return
        }
        guard case .invalid = check("/media/12.jpg?exp=0x10&sig=a") else {
            Issue.record("a hex expiry was accepted")
            return
        }
        #expect(check("/media/12.jpg?width=3") == .absent)
    }

    @Test func onlyPicturesAndThePreviewAreLinkable() {
        #expect(SignedLinks.isLinkable("/media/1.jpg"))
        #expect(SignedLinks.isLinkable("/preview.mjpg"))
        #expect(SignedLinks.isLinkable("/preview.jpg"))
        #expect(!SignedLinks.isLinkable("/media/01.jpg"))
        #expect(!SignedLinks.isLinkable("/media/.jpg"))
        #expect(!SignedLinks.isLinkable("/library"))
        #expect(!SignedLinks.isLinkable("/media/1.jpg/../../library"))
    }

    @Test func theKeyIsMadeOnceWithOwnerOnlyPermissionsAndKept() async throws {
        try await withTemporaryDirectory { directory in
            let first = try SignedLinks.loadOrCreate(dataDirectory: directory)
            let again = try SignedLinks.loadOrCreate(dataDirectory: directory)
            #expect(
                first.link(path: "/preview.jpg", expiresAt: 5)
                    == again.link(path: "/preview.jpg", expiresAt: 5))
            var info = stat()
            #expect(stat(directory + "/" + SignedLinks.keyFileName, &info) == 0)
            #expect(info.st_mode & 0o777 == 0o600)
            // Written aside and renamed: nothing but the key is left behind.
            let names = try listDirectory(directory)
            #expect(names == [SignedLinks.keyFileName])
            // Another data directory has another key: its links are not valid here.
            try await withTemporaryDirectory { other in
                let stranger = try SignedLinks.loadOrCreate(dataDirectory: other)
                #expect(
                    stranger.link(path: "/preview.jpg", expiresAt: 5)
                        != first.link(path: "/preview.jpg", expiresAt: 5))
            }
        }
    }
}

/// The names in `path`, sorted.
private func listDirectory(_ path: String) throws -> [String] {
    guard let directory = opendir(path) else { throw SystemError(errno: errno, call: "opendir") }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names.sorted()
}
