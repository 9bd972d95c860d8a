import AccessTestSupport
import Crypto
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

@Suite("JWT verifier")
struct JWTVerifierTests {
    static let rsa = try! PrivateKey.generateRSA()
    static let at = Instant(secondsSinceEpoch: TestJWT.now)

    static func verifier(
        _ configure: (inout JWTPolicy) -> Void = { _ in }, keys: JWKSet = JWKSet(keys: []), capacity: Int = 100
    ) -> JWTVerifier {
        var policy = JWTPolicy()
        configure(&policy)
        return JWTVerifier(policy: policy, hs256Secret: TestJWT.secret, keySet: keys, cacheCapacity: capacity)
    }

    static func token(sub: String = "u1", exp: Double = TestJWT.now + 60, _ extra: String = "") -> [UInt8] {
        Array(TestJWT.hs256(#"{"sub":"\#(sub)","exp":\#(Int(exp))\#(extra)}"#).utf8)
    }

    @Test("a returning token comes from the cache, until it expires")
    func caches() async throws {
        let verifier = Self.verifier()
        let token = Self.token(exp: TestJWT.now + 60)
        let first = try verifier.verifyNow(token, now: Self.at).get()
        #expect(!first.cached)
        #expect(first.caller == Caller(userID: "jwt:u1", plan: "default"))
        #expect(first.expiresAt == TestJWT.now + 60 + 30)
        #expect(try verifier.verifyNow(token, now: Self.at).get().cached)
        // Past exp plus the leeway the cache does not answer; the full check says why.
        #expect(verifier.verifyNow(token, now: Self.at.advanced(by: 91)) == .failure(.expired))
        #expect(verifier.cachedCount == 0)
    }

    @Test("a new key set ends what the old one verified")
    func cacheFollowsKeySet() throws {
        let key = try JWTKey(id: "k1", components: Self.rsa.publicKey.components)
        let verifier = Self.verifier(keys: JWKSet(keys: [key]))
        let token = Array(
            try TestJWT.signed(
                #"{"sub":"u","exp":\#(Int(TestJWT.now + 60))}"#, key: Self.rsa, kid: "k1", algorithm: "RS256"
            ).utf8)
        #expect(try !verifier.verifyNow(token, now: Self.at).get().cached)
        #expect(try verifier.verifyNow(token, now: Self.at).get().cached)
        // The same keys again change nothing.
        #expect(!verifier.install(JWKSet(keys: [key])))
        #expect(try verifier.verifyNow(token, now: Self.at).get().cached)
        #expect(verifier.install(JWKSet(keys: [])))
        #expect(verifier.verifyNow(token, now: Self.at) == .failure(.unknownKey))
    }

    @Test("the cache holds at most its capacity, and keeps the tokens in use")
    func boundedCache() throws {
        let verifier = Self.verifier(capacity: 10)
        let kept = Self.token(sub: "kept")
        _ = verifier.verifyNow(kept, now: Self.at)
        for index in 0..<100 {
            _ = verifier.verifyNow(Self.token(sub: "user-\(index)"), now: Self.at)
            #expect(try verifier.verifyNow(kept, now: Self.at).get().cached)
            #expect(verifier.cachedCount <= 10)
        }
    }

    @Test("the plan comes from the configured claim, nested or not, and only when it exists")
    func plans() throws {
        let catalog = try PlanCatalog.parse("pro:100:4:-")
        let flat = Self.verifier { $0.plans = catalog }
        #expect(try flat.verifyNow(Self.token(#","plan":"pro""#), now: Self.at).get().caller.plan == "pro")
        #expect(
            try flat.verifyNow(Self.token(sub: "u2", #","plan":"platinum""#), now: Self.at).get().caller.plan
                == "default")
        #expect(try flat.verifyNow(Self.token(sub: "u3", #","plan":7"#), now: Self.at).get().caller.plan == "default")
        let nested = Self.verifier {
            $0.plans = catalog
            $0.planClaim = ["app_metadata", "plan"]
        }
        #expect(
            try nested.verifyNow(Self.token(#","app_metadata":{"plan":"pro"}"#), now: Self.at).get().caller.plan
                == "pro")
    }

    @Test("JWT_ALGORITHMS narrows what is accepted, even with a key for it")
    func allowList() {
        let verifier = Self.verifier { $0.algorithms = [.rs256] }
        #expect(verifier.verifyNow(Self.token(), now: Self.at) == .failure(.algorithmNotAllowed))
    }

    @Test("a token over 8 KiB is refused before it is decoded or hashed")
    func oversized() {
        let verifier = Self.verifier()
        let token = [UInt8](repeating: UInt8(ascii: "!"), count: JWTVerifier.maximumTokenBytes + 1)
        #expect(verifier.verifyNow(token, now: Self.at) == .failure(.oversized))
    }

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

    @Test("base64url: canonical only, and round trips")
    func base64URL() {
        for count in 0..<40 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) }
            let text = Base64URL.encode(bytes)
            #expect(Base64URL.decode(text.utf8) == bytes)
            #expect(!text.contains("="))
        }
        for bad in ["a", "ab=", "a+b/", "ab c", "e31", "AB==", "A"] {
            #expect(Base64URL.decode(bad.utf8) == nil, "\(bad)")
        }
        #expect(Base64URL.decode("e30".utf8) == Array("{}".utf8))
    }
}
