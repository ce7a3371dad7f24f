import ShutterSystem
import Testing

@Suite struct SHA256Tests {
    // The test vectors of FIPS 180-2, appendix B, and the empty message.
    @Test func digestsMatchTheStandardsVectors() {
        #expect(
            SHA256.hexDigest(Array("".utf8))
                == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(
            SHA256.hexDigest(Array("abc".utf8))
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(
            SHA256.hexDigest(Array("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8))
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
        #expect(
            SHA256.hexDigest([UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000))
                == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    @Test func digestIsThirtyTwoBytesOfTheHexDigest() {
        let digest = SHA256.digest(Array("abc".utf8))
        #expect(digest.count == 32)
        #expect(digest.prefix(4) == [0xba, 0x78, 0x16, 0xbf])
    }
}

@Suite struct SecretsTests {
    @Test func randomBytesFillsTheCountAskedForEvenPastOneGetrandomBlock() throws {
        #expect(try Secrets.randomBytes(count: 0).isEmpty)
        #expect(try Secrets.randomBytes(count: 32).count == 32)
        // getrandom(2) returns at most 256 bytes whole; more are read in a loop.
        let long = try Secrets.randomBytes(count: 4096)
        #expect(long.count == 4096)
        // 4 KiB of random bytes with no byte value at all is as good as impossible (< 2^-300).
        #expect(Set(long).count > 200)
    }

    @Test func twoDrawsDiffer() throws {
        #expect(try Secrets.randomBytes(count: 32) != Secrets.randomBytes(count: 32))
    }
}
