import FoundationEssentials
import ShutterHTTP

/// What a request's `Authorization` header offers.
///
/// Both schemes carry the same token: `Bearer TOKEN` (RFC 6750) for scripts, and HTTP Basic
/// (RFC 7617) with any user name and the token as the password, so that browsers show their
/// login prompt and `curl -u :TOKEN` works.
enum PresentedCredential: Equatable {
    /// No `Authorization` header.
    case none
    case token([UInt8])
    /// A header that is neither scheme well formed; the reason is safe to show the client.
    case malformed(String)

    init(_ headers: HTTPHeaders) {
        let values = headers.values("Authorization")
        guard let value = values.first else {
            self = .none
            return
        }
        guard values.count == 1 else {
            self = .malformed("more than one Authorization header")
            return
        }
        let trimmed = value.trimmingSpaces()
        guard let space = trimmed.firstIndex(of: " ") else {
            self = .malformed("the Authorization header names no credentials")
            return
        }
        let scheme = trimmed[..<space]
        let credentials = trimmed[trimmed.index(after: space)...].trimmingSpaces()
        if scheme.caseInsensitiveEquals("Bearer") {
            guard !credentials.isEmpty, !credentials.contains(" ") else {
                self = .malformed("a Bearer credential is one token")
                return
            }
            self = .token(Array(credentials.utf8))
        } else if scheme.caseInsensitiveEquals("Basic") {
            guard let decoded = Data(base64Encoded: String(credentials)),
                let colon = decoded.firstIndex(of: UInt8(ascii: ":"))
            else {
                self = .malformed("a Basic credential is base64 of user:token")
                return
            }
            self = .token(Array(decoded[decoded.index(after: colon)...]))
        } else {
            self = .malformed("unsupported scheme '\(scheme.prefix(20))'; use Bearer or Basic")
        }
    }
}
