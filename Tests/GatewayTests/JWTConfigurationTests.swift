import Testing

@testable import Access
@testable import Gateway

/// The JWT_* settings: what starts, what does not and why, and what is read.
@Suite("JWT configuration")
struct JWTConfigurationTests {
    @Test(
        "configuration: what starts and what does not",
        arguments: [
            (["JWT_HS256_SECRET": "too-short"], "at least 32 bytes"),
            (["JWT_ISSUER": "https://id"], "no key is"),
            (["JWT_JWKS_URL": "http://id.example/jwks"], "https://"),
            (["JWT_JWKS_URL": "http://127.0.0.1@evil.example/jwks"], "https://"),
            (["JWT_JWKS_URL": "ftp://id/jwks"], "https://"),
            (["JWT_JWKS_URL": "https://id/jwks", "JWT_JWKS_FILE": "/x"], "not both"),
            (["JWT_JWKS_FILE": "/nonexistent/jwks.json"], "JWT_JWKS_FILE"),
            (
                ["JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_ALGORITHMS": "HS256,PS256"],
                "JWT_ALGORITHMS"
            ),
            (["JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_PLAN_CLAIM": "app..plan"], "JWT_PLAN_CLAIM"),
            (
                ["JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_LEEWAY_SECONDS": "-1"],
                "JWT_LEEWAY_SECONDS"
            ),
        ] as [([String: String], String)]
    )
    func refusedConfigurations(environment: [String: String], message: String) {
        #expect {
            _ = try GatewayConfiguration(environment: environment)
        } throws: { error in
            "\(error)".contains(message) && !"\(error)".contains("too-short")
        }
    }

    @Test(
        "JWT_ALGORITHMS naming no algorithm a configured key can verify stops the start, saying which key each needs",
        arguments: [
            ["JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_ALGORITHMS": "RS256"],
            ["JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_ALGORITHMS": "RS256,ES256"],
            ["JWT_JWKS_URL": "https://id.example/jwks", "JWT_ALGORITHMS": "HS256"],
        ]
    )
    func algorithmsWithoutKey(environment: [String: String]) {
        do {
            _ = try GatewayConfiguration(environment: environment)
            Issue.record("accepted \(environment)")
        } catch {
            #expect(error.message.contains("JWT_ALGORITHMS names no algorithm a configured key can verify"))
            #expect(error.message.contains("HS256 needs JWT_HS256_SECRET"))
            #expect(error.message.contains("RS256 and ES256 need JWT_JWKS_FILE or JWT_JWKS_URL"))
        }
    }

    @Test(
        "JWT_ALGORITHMS with at least one algorithm a configured key can verify starts",
        arguments: [
            ["JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_ALGORITHMS": "HS256"],
            ["JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_ALGORITHMS": "RS256,HS256"],
            ["JWT_JWKS_URL": "https://id.example/jwks", "JWT_ALGORITHMS": "ES256"],
            [
                "JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_JWKS_URL": "https://id.example/jwks",
                "JWT_ALGORITHMS": "RS256",
            ],
        ]
    )
    func algorithmsWithKey(environment: [String: String]) throws {
        #expect(try GatewayConfiguration(environment: environment).jwt != nil)
    }

    @Test("configuration: the variables read")
    func configuration() throws {
        let configuration = try GatewayConfiguration(environment: [
            "JWT_HS256_SECRET": String(repeating: "s", count: 32), "JWT_JWKS_URL": "http://127.0.0.1:1/jwks",
            "JWT_ISSUER": "https://id", "JWT_AUDIENCE": "a, b", "JWT_PLAN_CLAIM": "app_metadata.plan",
            "JWT_LEEWAY_SECONDS": "5",
            "JWT_ALGORITHMS": "rs256,HS256", "JWT_JWKS_REFRESH_SECONDS": "60",
        ])
        let jwt = try #require(configuration.jwt)
        #expect(jwt.hs256Secret?.count == 32)
        #expect(jwt.jwksURL == "http://127.0.0.1:1/jwks")
        #expect(jwt.policy.issuer == "https://id")
        #expect(jwt.policy.audiences == ["a", "b"])
        #expect(jwt.policy.planClaim == ["app_metadata", "plan"])
        #expect(jwt.policy.leewaySeconds == 5)
        #expect(jwt.policy.algorithms == [.rs256, .hs256])
        #expect(jwt.jwksRefresh == .seconds(60))
        #expect(configuration.requiresTokens)
        #expect(try GatewayConfiguration(environment: [:]).jwt == nil)
    }
}
