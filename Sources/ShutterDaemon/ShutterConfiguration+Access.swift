import ShutterHTTP

/// The `anonymous` key: a scope, or the default that depends on where the daemon listens.
public enum AccessScopeSetting: Sendable, Equatable, CustomStringConvertible {
    /// `admin` when listening on loopback with no tokens (a private machine), else `none`.
    case automatic
    case scope(AccessScope)

    public var description: String {
        switch self {
        case .automatic: "auto"
        case .scope(let scope): scope.description
        }
    }
}

extension ConfigurationKey {
    /// Access control and the browser defences (docs/API.md, "Access control").
    static let accessKeys: [ConfigurationKey] = [
        ConfigurationKey(
            name: "auth_tokens", valueName: "FILE",
            help:
                "access tokens, one 'SCOPE TOKEN' a line (scopes view, snap, admin; # comments); a relative name is looked up in systemd's $CREDENTIALS_DIRECTORY first, and without this key $CREDENTIALS_DIRECTORY/auth-tokens is used if present",
            apply: { config, text in config.authTokensPath = text },
            current: { $0.authTokensPath.isEmpty ? "none" : $0.authTokensPath }),
        ConfigurationKey(
            name: "anonymous", valueName: "SCOPE",
            help:
                "what a request without credentials may do: none, view, snap, admin, or auto (admin when every listener is loopback and there are no tokens, else none)",
            apply: { config, text in
                if text == "auto" {
                    config.anonymous = .automatic
                } else if let scope = AccessScope(name: text) {
                    config.anonymous = .scope(scope)
                } else {
                    throw ConfigurationError(
                        "anonymous: '\(text)' is not one of none, view, snap, admin, auto")
                }
            },
            current: { $0.anonymous.description }),
        ConfigurationKey(
            name: "allowed_hosts", valueName: "LIST",
            help:
                "host names the Host header may carry besides IP addresses and localhost (comma-separated); others get 421, which stops DNS rebinding",
            apply: { config, text in config.allowedHosts = list(text) },
            current: { $0.allowedHosts.isEmpty ? "none" : $0.allowedHosts.joined(separator: ",") }),
        ConfigurationKey(
            name: "cors_origins", valueName: "LIST",
            help:
                "origins (https://host[:port]) whose pages may call the API cross-origin, with credentials (comma-separated); off by default",
            apply: { config, text in config.corsOrigins = list(text) },
            current: { $0.corsOrigins.isEmpty ? "none" : $0.corsOrigins.joined(separator: ",") }),
        boolean(
            "insecure_no_auth",
            "listen on a non-loopback address without tokens, open to everyone who can reach it (logged as a warning at every start)",
            \.insecureNoAuth),
    ]

    private static func list(_ text: String) -> [String] {
        text.split(separator: ",").map { String($0.trimmingSpaces()) }.filter { !$0.isEmpty }
    }
}
