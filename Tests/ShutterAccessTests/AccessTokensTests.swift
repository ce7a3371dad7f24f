import ShutterHTTP
import Testing

@testable import ShutterAccess

@Suite struct AccessTokensTests {
    @Test func linesGiveScopesAndCommentsAreSkipped() throws {
        let tokens = try AccessTokens.parse(
            """
            # the kitchen tablet
            view  viewer-token-0123456789

            snap\tsnapper-token-0123456789
            admin admin-token-0123456789\r
            """, source: "tokens")
        #expect(tokens.count == 3)
        #expect(tokens.scope(of: Array("viewer-token-0123456789".utf8)) == .view)
        #expect(tokens.scope(of: Array("snapper-token-0123456789".utf8)) == .snap)
        #expect(tokens.scope(of: Array("admin-token-0123456789".utf8)) == .admin)
        #expect(tokens.scope(of: Array("admin-token-012345678".utf8)) == nil)
        #expect(tokens.scope(of: []) == nil)
    }

    @Test(arguments: [
        ("view", "line 1: expected 'SCOPE TOKEN'"),
        ("root long-enough-token-0123", "unknown scope 'root'"),
        ("none long-enough-token-0123", "unknown scope 'none'"),
        ("view short", "use at least 16"),
        ("view a b", "expected 'SCOPE TOKEN'"),
        ("view same-token-0123456789\nadmin same-token-0123456789", "line 2: the same token is listed twice"),
        ("view tökén-0123456789012345", "printable ASCII"),
    ])
    func badLinesAreRefusedNamingTheLine(text: String, expected: String) {
        #expect {
            try AccessTokens.parse(text, source: "tokens")
        } throws: { error in
            String(describing: error).contains(expected) && String(describing: error).contains("tokens line")
        }
    }
}

@Suite struct PresentedCredentialTests {
    @Test func bearerAndBasicCarryTheToken() {
        #expect(PresentedCredential(["Authorization": "Bearer abc"]) == .token(Array("abc".utf8)))
        #expect(PresentedCredential(["Authorization": "bearer  abc "]) == .token(Array("abc".utf8)))
        // curl -u :secret, and a browser's prompt with any user name.
        #expect(PresentedCredential(["Authorization": "Basic OnNlY3JldA=="]) == .token(Array("secret".utf8)))
        #expect(
            PresentedCredential(["Authorization": "Basic dXNlcjpzZTpjcmV0"]) == .token(Array("se:cret".utf8)))
        #expect(PresentedCredential([:]) == .none)
    }

    @Test func malformedHeadersAreNamed() {
        let cases: [HTTPHeaders] = [
            ["Authorization": "Bearer"], ["Authorization": "Bearer a b"], ["Authorization": "Basic !!!"],
            ["Authorization": "Basic dXNlcg=="], ["Authorization": "Digest x=1"],
            ["Authorization": "Bearer a", "authorization": "Bearer b"],
        ]
        for headers in cases {
            guard case .malformed = PresentedCredential(headers) else {
                Issue.record("\(headers) was not refused")
                continue
            }
        }
    }
}
