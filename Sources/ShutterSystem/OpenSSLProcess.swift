import CCrypto

/// OpenSSL's process-wide state, set up once by `main` before any thread starts.
public enum OpenSSLProcess {
    /// Keeps OpenSSL's global state until the process ends, instead of letting `exit` free it.
    ///
    /// By default the first use of libcrypto registers `OPENSSL_cleanup` with `atexit`, and
    /// `exit` then frees the default library context while the daemon's detached threads (the
    /// catalog's, the log writer, a handler past the grace period) may still be in libcrypto:
    /// a digest or a TLS write after that reads freed locks (docs/sanitizers.md has the SEGV it
    /// once caused). `OPENSSL_INIT_NO_ATEXIT` must be in the first call into libcrypto to take
    /// effect, later ones (libssl's, libcurl's, libmosquitto's) then register nothing; the kernel
    /// frees the memory at exit anyway. Only the base is initialised here: no configuration file
    /// read and no provider loaded, so a daemon that never needs them pays nothing more.
    /// Returns false when OpenSSL refused (then its default stays: the handler is registered).
    @discardableResult
    public static func keepStateUntilExit() -> Bool {
        OPENSSL_init_crypto(UInt64(OPENSSL_INIT_NO_ATEXIT), nil) == 1
    }
}
