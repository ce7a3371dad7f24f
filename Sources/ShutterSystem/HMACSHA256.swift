import CCrypto
import CShutterLinux

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

    /// `count` bytes from the kernel's CSPRNG (getrandom(2), which blocks only until the pool
    /// is first initialised at boot). Not OpenSSL's `RAND_bytes`: its DRBG is seeded from the
    /// same source, and its first use loads the default provider (2 MiB resident for good).
    public static func randomBytes(count: Int) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            // Up to 256 bytes come whole; more may come short if a signal arrives (random(7)).
            let read = bytes.withUnsafeMutableBytes { buffer in
                getrandom(buffer.baseAddress! + filled, count - filled, 0)
            }
            if read < 0 {
                let code = errno
                if code == EINTR { continue }
                throw SystemError(errno: code, call: "getrandom")
            }
            filled += read
        }
        return bytes
    }
}
