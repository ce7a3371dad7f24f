import ShutterSystem
import ShutterTestSupport
import Testing

@testable import ShutterHTTP

#if canImport(Glibc)
    import Glibc
#endif

/// Loading a certificate and key: the real OpenSSL on files written here (a self-signed P-256
/// certificate valid for a century, and a second key that does not belong to it).
@Suite struct TLSContextTests {
    static let certificate = """
        -----BEGIN CERTIFICATE-----
        MIIBiDCCAS+gAwIBAgIUJNIiRdofPlhoZIiBDDhubYsR14QwCgYIKoZIzj0EAwIw
        GTEXMBUGA1UEAwwOc2h1dHRlci10ZXN0LWEwIBcNMjYxMjAyMDEyOTQ5WhgPMjEy
        NjExMDgwMTI5NDlaMBkxFzAVBgNVBAMMDnNodXR0ZXItdGVzdC1hMFkwEwYHKoZI
        zj0CAQYIKoZIzj0DAQcDQgAEQvaGeA7Jq0jOudTMvhV/0lxPl7moDoX5s6ag9b9u
        wbu006dYJ1UtsIKhQgvRg8HnroOKwLdOt465XGgFAcM1KaNTMFEwHQYDVR0OBBYE
        FAvgUads+bDtZSnnXZGmugLieR08MB8GA1UdIwQYMBaAFAvgUads+bDtZSnnXZGm
        ugLieR08MA8GA1UdEwEB/wQFMAMBAf8wCgYIKoZIzj0EAwIDRwAwRAIgIBZqngnh
        x5yyz0Br8rq/GqFhMyAQHXUN0VpePAYfpHcCIGG2iVOu5hi6wSwIsHljH7Pw9194
        oFpFIyKj5IjQWfnF
        -----END CERTIFICATE-----
        """
    static let key = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgjVyS9QBjOiTC5geH
        T+jAR7X4O5lyMOXaf6ISyzRnE0ihRANCAARC9oZ4DsmrSM651My+FX/SXE+XuagO
        hfmzpqD1v27Bu7TTp1gnVS2wgqFCC9GDweeug4rAt063jrlcaAUBwzUp
        -----END PRIVATE KEY-----
        """
    static let otherKey = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg0uwS20ciTaH5UxlU
        BojhKMUGfVagOMXXeCTZ0Sp0XJOhRANCAARKpm+kh6WhCXFOUerLPgj2l3fxf7ZR
        0rXcV5Pm+xmH/LUecO/vOs2ZJW1xouDX/LIkRGBYhVmbmQ9xarhHhSbN
        -----END PRIVATE KEY-----
        """

    /// A context with the test certificate, for servers in other tests (the files are gone
    /// once it is loaded).
    static func loaded() throws -> TLSContext {
        var context: TLSContext?
        try withFiles(["c.pem": certificate, "k.pem": key]) { directory in
            context = try TLSContext(certificatePath: directory + "/c.pem", keyPath: directory + "/k.pem")
        }
        return context!
    }

    /// Writes `files` (name to text) into a fresh directory and runs `body` with its path.
    private static func withFiles(_ files: [String: String], _ body: (String) throws -> Void) throws {
        let directory = try TemporaryDirectory.make()
        defer { try? TemporaryDirectory.remove(directory) }
        for (name, text) in files {
            let descriptor = open(directory + "/" + name, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            #expect(descriptor >= 0)
            let bytes = Array((text + "\n").utf8)
            _ = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
            closeDescriptor(descriptor)
        }
        try body(directory)
    }

    @Test func aMatchingPairLoads() throws {
        try Self.withFiles(["c.pem": Self.certificate, "k.pem": Self.key]) { directory in
            let context = try TLSContext(certificatePath: directory + "/c.pem", keyPath: directory + "/k.pem")
            #expect(context.certificatePath == directory + "/c.pem")
            #expect(context.subject == "/CN=shutter-test-a")
            #expect(context.expires == "2126-11-08T01:29:49Z")
        }
    }

    @Test func aMissingFileIsNamedWithItsReason() throws {
        try Self.withFiles(["k.pem": Self.key]) { directory in
            #expect {
                try TLSContext(certificatePath: directory + "/missing.pem", keyPath: directory + "/k.pem")
            } throws: { error in
                "\(error)" == "cannot read \(directory)/missing.pem: No such file or directory"
            }
        }
    }

    @Test func aFileThatIsNotPEMIsNamed() throws {
        try Self.withFiles(["c.pem": "not a certificate", "k.pem": Self.key]) { directory in
            #expect {
                try TLSContext(certificatePath: directory + "/c.pem", keyPath: directory + "/k.pem")
            } throws: { error in
                "\(error)".hasPrefix(
                    "cannot load the certificate chain (PEM) from \(directory)/c.pem: error:")
                    && (error as? TLSError)?.code != 0
            }
        }
    }

    @Test func aKeyOfAnotherCertificateIsRefused() throws {
        try Self.withFiles(["c.pem": Self.certificate, "k.pem": Self.otherKey]) { directory in
            #expect {
                try TLSContext(certificatePath: directory + "/c.pem", keyPath: directory + "/k.pem")
            } throws: { error in
                "\(error)".hasPrefix("the private key does not match the certificate: \(directory)/k.pem")
            }
        }
    }
}
