import COpenSSL
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// A certificate and its key, loaded into an OpenSSL server context (`SSL_CTX`): TLS 1.2 and
/// 1.3 only, no renegotiation, kernel TLS where the kernel offers it.
///
/// Immutable once made, so a reload (SIGHUP) makes a new one and the server swaps it: every
/// connection holds a reference to the context it was accepted with (`SSL_new` counts it),
/// so connections already open keep their certificate while new ones get the new one.
public final class TLSContext: @unchecked Sendable {
    // @unchecked Sendable: the SSL_CTX is not changed after init, and OpenSSL allows
    // SSL_new on one context from any thread (its reference count is atomic).
    let context: OpaquePointer
    /// The PEM certificate chain the context serves.
    public let certificatePath: String
    /// The PEM private key of the certificate.
    public let keyPath: String
    /// The certificate's subject, such as `/CN=shutterd`, for the log.
    public let subject: String
    /// When the certificate expires (UTC, ISO 8601), for the log; empty if unreadable.
    public let expires: String

    /// Loads the certificate chain and key; throws when either is missing, unreadable, not
    /// PEM, or when the key does not belong to the certificate.
    public init(certificatePath: String, keyPath: String) throws(TLSError) {
        // Checked first so a missing or unreadable file is named with its errno, rather than
        // by OpenSSL's less direct "system library" error.
        for path in [certificatePath, keyPath] where access(path, R_OK) != 0 {
            let code = errno
            throw TLSError(
                operation: "cannot read", path: path, code: 0, reason: String(cString: strerror(code)))
        }
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_server_method()) else {
            throw TLSError.fromQueue("SSL_CTX_new")
        }
        guard cshutter_ssl_ctx_configure_server(context) == 1 else {
            SSL_CTX_free(context)
            throw TLSError.fromQueue("limit the protocol to TLS 1.2 and 1.3")
        }
        guard SSL_CTX_use_certificate_chain_file(context, certificatePath) == 1 else {
            SSL_CTX_free(context)
            throw TLSError.fromQueue("cannot load the certificate chain (PEM) from", path: certificatePath)
        }
        guard SSL_CTX_use_PrivateKey_file(context, keyPath, SSL_FILETYPE_PEM) == 1 else {
            SSL_CTX_free(context)
            // Loading the key checks it against the certificate: say which failure it was.
            if cshutter_err_is_key_mismatch(ERR_peek_error()) == 1 {
                throw TLSError.fromQueue("the private key does not match the certificate:", path: keyPath)
            }
            throw TLSError.fromQueue("cannot load the private key (PEM) from", path: keyPath)
        }
        guard SSL_CTX_check_private_key(context) == 1 else {
            SSL_CTX_free(context)
            throw TLSError.fromQueue(
                "the private key does not match the certificate:", path: keyPath)
        }
        self.context = context
        self.certificatePath = certificatePath
        self.keyPath = keyPath
        (subject, expires) = Self.describeCertificate(context)
    }

    /// The subject and expiry of the context's certificate: what an operator checks after a reload.
    private static func describeCertificate(_ context: OpaquePointer) -> (String, String) {
        guard let certificate = SSL_CTX_get0_certificate(context) else { return ("", "") }
        var name = [CChar](repeating: 0, count: 256)
        X509_NAME_oneline(X509_get_subject_name(certificate), &name, Int32(name.count))
        let subject = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var time = tm()
        guard let notAfter = X509_get0_notAfter(certificate), ASN1_TIME_to_tm(notAfter, &time) == 1 else {
            ERR_clear_error()
            return (subject, "")
        }
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let expires =
            "\(time.tm_year + 1900)-\(two(time.tm_mon + 1))-\(two(time.tm_mday))T"
            + "\(two(time.tm_hour)):\(two(time.tm_min)):\(two(time.tm_sec))Z"
        return (subject, expires)
    }

    deinit {
        // Connections still open hold their own reference; OpenSSL frees it after the last.
        SSL_CTX_free(context)
    }
}
