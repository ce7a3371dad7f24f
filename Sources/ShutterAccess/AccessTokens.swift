import ShutterHTTP
import ShutterSystem

/// The access tokens a daemon accepts, each with its scope, read from a token file:
/// one `SCOPE TOKEN` a line, `#` comments and blank lines ignored.
///
/// Only each token's SHA-256 is kept, and a presented token is compared with every entry in
/// constant time, so neither a memory dump nor the time an answer takes gives a token away.
public struct AccessTokens: Sendable {
    /// Shorter tokens are refused: a guessable token is no protection.
    public static let minimumLength = 16

    struct Entry: Sendable {
        let digest: [UInt8]
        let scope: AccessScope
    }

    let entries: [Entry]

    /// No tokens: nothing can authenticate.
    public static let none = AccessTokens(entries: [])

    init(entries: [Entry]) { self.entries = entries }

    /// How many tokens there are.
    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }

    /// The tokens in a token file's `text`; `source` names the file in errors.
    public static func parse(_ text: String, source: String) throws(AccessConfigurationError) -> AccessTokens
    {
        var entries: [Entry] = []
        var seen: [[UInt8]] = []
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.trimmingSpaces().trimmingCharacters("\r")
            if line.isEmpty || line.hasPrefix("#") { continue }
            let location = "\(source) line \(index + 1)"
            let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" })
            guard fields.count == 2 else {
                throw AccessConfigurationError(
                    "\(location): expected 'SCOPE TOKEN' (scopes: view, snap, admin)")
            }
            guard let scope = AccessScope(name: fields[0]), scope != .none else {
                throw AccessConfigurationError(
                    "\(location): unknown scope '\(fields[0])' (scopes: view, snap, admin)")
            }
            let token = Array(fields[1].utf8)
            guard token.count >= minimumLength else {
                throw AccessConfigurationError(
                    "\(location): the token is \(token.count) characters; use at least \(minimumLength) (e.g. openssl rand -hex 24)"
                )
            }
            guard token.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw AccessConfigurationError("\(location): a token is printable ASCII without spaces")
            }
            let digest = SHA256.digest(token)
            guard !seen.contains(digest) else {
                throw AccessConfigurationError("\(location): the same token is listed twice")
            }
            seen.append(digest)
            entries.append(Entry(digest: digest, scope: scope))
        }
        return AccessTokens(entries: entries)
    }

    /// The scope `token` grants, or nil if it is none of these tokens.
    public func scope(of token: [UInt8]) -> AccessScope? {
        let digest = SHA256.digest(token)
        var found: AccessScope?
        // Every entry is compared, whichever matches: the time does not depend on which.
        for entry in entries where Secrets.constantTimeEquals(entry.digest, digest) {
            found = max(found ?? entry.scope, entry.scope)
        }
        return found
    }
}

/// A token file, link key or access setting that cannot be used; the daemon refuses to start.
public struct AccessConfigurationError: Error, CustomStringConvertible, Equatable, Sendable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

extension Substring {
    fileprivate func trimmingCharacters(_ character: Character) -> Substring {
        var text = self
        while text.last == character { text.removeLast() }
        return text
    }
}
