import ShutterAccess
import ShutterHTTP
import ShutterSystem

#if canImport(Glibc)
    import Glibc
#endif

/// Access control as the configuration asks for it: the tokens, what anonymous requests may
/// do, and the refusal to serve a non-loopback address to everyone by accident.
struct AccessSetup {
    let tokens: AccessTokens
    let anonymous: AccessScope
    let origins: OriginRules
    /// Where the tokens came from, for the log.
    let tokenSource: String?

    /// Reads the token file and checks the combination; throws a `ConfigurationError` that says
    /// what to change.
    /// `listeners` are where the daemon will listen: the configured addresses, or what
    /// systemd's socket activation passed.
    init(configuration: ShutterConfiguration, listeners: [ListenAddress], logger: Logger) throws {
        let path = Self.tokenFilePath(configuration)
        if let path {
            let bytes: [UInt8]
            do { bytes = try ConfigurationLoader.readWholeFile(path) } catch {
                throw ConfigurationError("auth_tokens: cannot read \(path) (\(error))")
            }
            do {
                tokens = try AccessTokens.parse(String(decoding: bytes, as: UTF8.self), source: path)
            } catch {
                throw ConfigurationError("auth_tokens: \(error)")
            }
            if tokens.isEmpty { throw ConfigurationError("auth_tokens: \(path) lists no tokens") }
            Self.warnIfReadableByOthers(path, logger: logger)
        } else {
            tokens = .none
        }
        tokenSource = path
        do {
            origins = try OriginRules(
                allowedHosts: configuration.allowedHosts, corsOrigins: configuration.corsOrigins)
        } catch {
            throw ConfigurationError(error.description)
        }
        let exposed = listeners.filter { !$0.isLoopback }
        let loopback = exposed.isEmpty
        if !loopback && tokens.isEmpty && !configuration.insecureNoAuth {
            throw ConfigurationError(
                "listening on \(exposed[0]) without access tokens would let anyone who can reach it watch, snap and delete: give --auth-tokens FILE, or --insecure-no-auth to serve everyone anyway"
            )
        }
        switch configuration.anonymous {
        case .scope(let scope): anonymous = scope
        case .automatic:
            anonymous = tokens.isEmpty && (loopback || configuration.insecureNoAuth) ? .admin : .none
        }
        if !loopback && tokens.isEmpty {
            logger.warning(
                "serving a non-loopback address without access tokens (--insecure-no-auth): anyone who can reach it may use everything",
                [
                    "address": exposed.map(\.description).joined(separator: ","),
                    "anonymous": anonymous.description,
                ])
        }
    }

    /// The token file to read: `auth_tokens` (a relative name found in `$CREDENTIALS_DIRECTORY`
    /// first), or systemd's `auth-tokens` credential, or none.
    static func tokenFilePath(_ configuration: ShutterConfiguration) -> String? {
        let credentials = configuration.credentialsDirectory.flatMap { $0.isEmpty ? nil : $0 }
        let configured = configuration.authTokensPath
        if configured.isEmpty {
            guard let credentials else { return nil }
            let path = credentials + "/auth-tokens"
            return access(path, F_OK) == 0 ? path : nil
        }
        if !configured.hasPrefix("/"), let credentials, access(credentials + "/" + configured, F_OK) == 0 {
            return credentials + "/" + configured
        }
        return configured
    }

    private static func warnIfReadableByOthers(_ path: String, logger: Logger) {
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        if info.st_mode & 0o004 != 0 {
            logger.warning("the token file is readable by every user; chmod 600 it", ["file": path])
        }
    }
}
