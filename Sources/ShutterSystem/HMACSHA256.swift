import CCrypto

#if canImport(Glibc)
    import Glibc
#endif

/// HMAC-SHA256 (RFC 2104), computed by OpenSSL's libcrypto.
public enum HMACSHA256 {
    /// The 32-byte authentication code of `message` under `key`.
    public static func code(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var code = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        key.withUnsafeBytes { keyBytes in
            message.withUnsafeBytes { messageBytes in
                _ = HMAC(
                    EVP_sha256(), keyBytes.baseAddress, Int32(keyBytes.count),
                    messageBytes.baseAddress?.assumingMemoryBound(to: UInt8.self), messageBytes.count, &code,
                    &length)
            }
        }
        return Array(code.prefix(Int(length)))
    }
}

/// Comparisons and randomness for secrets.
public enum Secrets {
    /// Whether `a` and `b` are equal, taking the same time wherever they differ
    /// (`CRYPTO_memcmp`), so a guess cannot be refined byte by byte by timing the answers.
    /// Arrays of different lengths are unequal; length is not secret here (digests compare).
    public static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { x in
            b.withUnsafeBytes { y in CRYPTO_memcmp(x.baseAddress, y.baseAddress, a.count) == 0 }
        }
    }

    /// `count` bytes from OpenSSL's CSPRNG (`RAND_bytes`).
    public static func randomBytes(count: Int) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        guard RAND_bytes(&bytes, Int32(count)) == 1 else {
            throw SystemError(errno: EIO, call: "RAND_bytes")
        }
        return bytes
    }
}
