import CCrypto

/// SHA-256 digests, computed by OpenSSL's libcrypto.
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        // The low-level calls, not the one-shot SHA256() or EVP: the same assembly, but no
        // provider to load (2 MiB resident for good, the first time; see CCrypto's shim.h).
        var context = SHA256_CTX()
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        _ = SHA256_Init(&context)
        _ = SHA256_Update(&context, bytes.baseAddress, bytes.count)
        _ = SHA256_Final(&digest, &context)
        return digest
    }

    /// The 32-byte digest of `bytes`.
    public static func digest(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { digest($0) }
    }

    /// The lowercase hex digest of `bytes`.
    public static func hexDigest(_ bytes: UnsafeRawBufferPointer) -> String {
        let digest = digest(bytes)
        let hex: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(digest.count * 2)
        for byte in digest {
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The lowercase hex digest of `bytes`.
    public static func hexDigest(_ bytes: [UInt8]) -> String {
        bytes.withUnsafeBytes { hexDigest($0) }
    }
}
