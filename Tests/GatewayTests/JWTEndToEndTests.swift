import AccessTestSupport
import Crypto
import HTTPClient
import TestSupport
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

/// Sign-in with the app's JWTs over HTTP: every way a token can be wrong is `401` with
/// `WWW-Authenticate: Bearer error="invalid_token"`, logged with its reason and never the token.
@Suite("Sign-in JWTs end to end", .serialized)
struct JWTEndToEndTests {
    static let rsa = try! PrivateKey.generateRSA()
    static let otherRSA = try! PrivateKey.generateRSA()
    static let ec = try! PrivateKey.generateP256()
    static let sample = ProcessEndToEndTests.sample

    struct Case: CustomStringConvertible, Sendable {
        let name: String
        /// The token, made when the case runs.
        let token: @Sendable () throws -> String
        /// nil: accepted; else the reason the log gives.
        let refusal: String?
        var description: String { name }
    }

    static func claims(_ extra: [(String, String)] = [], sub: String? = "user-1", exp: Double? = TestJWT.now + 600)
        -> String
    {
        TestJWT.claims(sub: sub, exp: exp, extra)
    }

    static let cases: [Case] = [
        Case(name: "valid HS256", token: { TestJWT.hs256(claims()) }, refusal: nil),
        Case(
            name: "valid RS256", token: { try TestJWT.signed(claims(), key: rsa, kid: "rsa-1", algorithm: "RS256") },
            refusal: nil),
        Case(
            name: "valid ES256", token: { try TestJWT.signed(claims(), key: ec, kid: "ec-1", algorithm: "ES256") },
            refusal: nil),
        Case(
            name: "typ at+jwt", token: { TestJWT.hs256(claims(), header: #"{"alg":"HS256","typ":"at+jwt"}"#) },
            refusal: nil),
        Case(
            name: "audience in an array", token: { TestJWT.hs256(claims([("aud", #"["other","textgateway"]"#)])) },
            refusal: nil),
        Case(name: "expired within the leeway", token: { TestJWT.hs256(claims(exp: TestJWT.now - 20)) }, refusal: nil),
        Case(name: "expired", token: { TestJWT.hs256(claims(exp: TestJWT.now - 31)) }, refusal: "expired"),
        Case(
            name: "not yet valid (nbf)", token: { TestJWT.hs256(claims([("nbf", "\(Int(TestJWT.now + 120))")])) },
            refusal: "not_yet_valid"),
        Case(
            name: "issued in the future (iat)",
            token: { TestJWT.hs256(claims([("iat", "\(Int(TestJWT.now + 120))")])) }, refusal: "not_yet_valid"),
        Case(name: "no exp", token: { TestJWT.hs256(claims(exp: nil)) }, refusal: "no_expiry"),
        Case(
            name: "exp not a number", token: { TestJWT.hs256(claims([("exp", "\"1900000000\"")])) },
            refusal: "no_expiry"),
        Case(
            name: "wrong signature (HS256, another secret)",
            token: {
                TestJWT.hs256(claims(), secret: Array("another-secret-of-at-least-32-bytes-long!".utf8))
            }, refusal: "signature"),
        Case(
            name: "wrong signature (RS256, a flipped byte)",
            token: {
                var token = try TestJWT.signed(claims(), key: rsa, kid: "rsa-1", algorithm: "RS256")
                let last = token.removeLast()
                token.append(last == "A" ? "Q" : "A")
                return token
            }, refusal: "signature"),
        Case(
            name: "wrong key (RS256 signed by another key under a known kid)",
            token: {
                try TestJWT.signed(claims(), key: otherRSA, kid: "rsa-1", algorithm: "RS256")
            }, refusal: "signature"),
        Case(
            name: "unknown kid", token: { try TestJWT.signed(claims(), key: rsa, kid: "rsa-9", algorithm: "RS256") },
            refusal: "unknown_key"),
        Case(
            name: "alg none, no signature",
            token: {
                TestJWT.part(#"{"alg":"none","typ":"JWT"}"#) + "." + TestJWT.part(claims()) + "."
            }, refusal: "algorithm"),
        Case(
            name: "alg none, HMAC signature", token: { TestJWT.hs256(claims(), header: #"{"alg":"none"}"#) },
            refusal: "algorithm"),
        Case(name: "alg HS512", token: { TestJWT.hs256(claims(), header: #"{"alg":"HS512"}"#) }, refusal: "algorithm"),
        Case(
            name: "algorithm confusion: HS256 with the RSA public key (DER) as the secret",
            token: {
                TestJWT.hs256(
                    claims(), header: #"{"alg":"HS256","kid":"rsa-1"}"#, secret: rsa.publicKey.derSubjectPublicKeyInfo)
            }, refusal: "signature"),
        Case(
            name: "algorithm confusion: RS256 under an EC key's kid",
            token: {
                try TestJWT.signed(claims(), key: rsa, kid: "ec-1", algorithm: "RS256")
            }, refusal: "key_mismatch"),
        Case(
            name: "algorithm confusion: ES256 under an RSA key's kid",
            token: {
                try TestJWT.signed(claims(), key: ec, kid: "rsa-1", algorithm: "ES256")
            }, refusal: "key_mismatch"),
        Case(
            name: "ES256 signature in DER, not r‖s",
            token: {
                try TestJWT.token(header: #"{"alg":"ES256","kid":"ec-1"}"#, claims: claims()) { input in
                    let raw = try ec.signature(for: input, algorithm: .ecdsaP256SHA256)
                    return derSignature(raw)
                }
            }, refusal: "signature"),
        Case(
            name: "wrong audience", token: { TestJWT.hs256(claims([("aud", "\"someone-else\"")])) }, refusal: "audience"
        ),
        Case(
            name: "no audience",
            token: { TestJWT.hs256(#"{"iss":"\#(TestJWT.issuer)","sub":"u","exp":\#(Int(TestJWT.now + 60))}"#) },
            refusal: "audience"),
        Case(
            name: "wrong issuer", token: { TestJWT.hs256(claims([("iss", "\"https://evil.example\"")])) },
            refusal: "issuer"),
        Case(name: "no sub", token: { TestJWT.hs256(claims(sub: nil)) }, refusal: "subject"),
        Case(
            name: "sub of 129 characters", token: { TestJWT.hs256(claims(sub: String(repeating: "s", count: 129))) },
            refusal: "subject"),
        Case(name: "sub with a space", token: { TestJWT.hs256(claims(sub: "a b")) }, refusal: "subject"),
        Case(name: "sub not a string", token: { TestJWT.hs256(claims([("sub", "42")])) }, refusal: "subject"),
        Case(
            name: "duplicate claim", token: { TestJWT.hs256(claims().dropLast() + #","sub":"admin"}"#) },
            refusal: "malformed"),
        Case(name: "claims not JSON", token: { TestJWT.hs256(#"{"sub":"u","exp":"#) }, refusal: "malformed"),
        Case(name: "claims a JSON array", token: { TestJWT.hs256("[1,2]") }, refusal: "malformed"),
        Case(
            name: "header not JSON", token: { TestJWT.hs256(claims(), header: #"{"alg":"HS256""#) },
            refusal: "malformed"),
        Case(
            name: "header with a duplicate alg",
            token: { TestJWT.hs256(claims(), header: #"{"alg":"none","alg":"HS256"}"#) }, refusal: "malformed"),
        Case(
            name: "base64 with padding",
            token: {
                let token = TestJWT.hs256(claims())
                let parts = token.split(separator: ".")
                return parts[0] + "=." + parts[1] + "." + parts[2]
            }, refusal: "malformed"),
        Case(
            name: "base64 with '+' (not base64url)",
            token: {
                let parts = TestJWT.hs256(claims()).split(separator: ".")
                return parts[0] + "." + parts[1].dropLast() + "+." + parts[2]
            }, refusal: "malformed"),
        Case(
            name: "base64 with non-zero padding bits",
            token: {
                // "e30" is "{}"; "e31" spells the same bytes with a non-zero padding bit.
                "eyJhbGciOiJIUzI1NiJ9.e31."
                    + Base64URL.encode(
                        HMAC.sha256(key: TestJWT.secret, message: Array("eyJhbGciOiJIUzI1NiJ9.e31".utf8)))
            }, refusal: "malformed"),
        Case(name: "four parts", token: { TestJWT.hs256(claims()) + ".e30" }, refusal: "malformed"),
        Case(
            name: "critical header", token: { TestJWT.hs256(claims(), header: #"{"alg":"HS256","crit":["exp"]}"#) },
            refusal: "critical_header"),
        Case(
            name: "typ of another kind of token",
            token: { TestJWT.hs256(claims(), header: #"{"alg":"HS256","typ":"secevent+jwt"}"#) }, refusal: "type"),
        Case(
            name: "oversized (over 8 KiB)",
            token: {
                TestJWT.hs256(claims([("pad", "\"" + String(repeating: "x", count: 6200) + "\"")]))
            }, refusal: "oversized"),
    ]

    /// An ES256 r‖s signature re-encoded as the DER SEQUENCE libcrypto speaks.
    static func derSignature(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.isEmpty || value[0] & 0x80 != 0 { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    /// The gateway of these tests: HS256 and a JWKS file with an RSA and a P-256 key, the
    /// tests' issuer and audience, and its clock fixed at ``TestJWT/now``.
    static func withGateway(_ body: (GatewayHarness) async throws -> Void) async throws {
        let file = storeDirectory() + "/jwks.json"
        try writeFile(file, try TestJWT.jwks([("rsa-1", rsa), ("ec-1", ec)]))
        var environment = [
            "JWT_HS256_SECRET": String(decoding: TestJWT.secret, as: UTF8.self), "JWT_JWKS_FILE": file,
            "JWT_ISSUER": TestJWT.issuer, "JWT_AUDIENCE": TestJWT.audience,
        ]
        environment["PLANS"] = "pro:100:4:-"
        let jwt = try GatewayConfiguration(environment: environment).jwt
        try await GatewayHarness.with(
            configure: { $0.jwt = jwt }, clock: { Instant(secondsSinceEpoch: TestJWT.now) }, body)
    }

    /// One gateway answers every case of the table in turn (a gateway each would start 40
    /// of them at once beside the other suites), each request with an id of its own.
    @Test("answers each token with its status and header, and logs why, never the token")
    func table() async throws {
        try await Self.withGateway { harness async throws in
            for (index, testCase) in Self.cases.enumerated() {
                let token = try testCase.token()
                let id = "jwt-case-\(index)"
                let response = try await harness.process(
                    task: "summarize", text: Self.sample,
                    headers: [("Authorization", "Bearer \(token)"), ("X-Request-Id", id)])
                // The access line is written when the request has finished, just after its answer.
                let marker = "request_id=\(id) "
                await eventually("the access line of \(testCase)") {
                    harness.logs.lines.contains { $0.contains(marker) && $0.contains(" request ") }
                }
                let line = try #require(
                    harness.logs.lines.first { $0.contains(marker) && $0.contains(" request ") }, "\(testCase)")
                if let refusal = testCase.refusal {
                    #expect(response.status == 401, "\(testCase)")
                    #expect(response.header("WWW-Authenticate") == #"Bearer error="invalid_token""#, "\(testCase)")
                    #expect(try Body(response).code == "unauthorized", "\(testCase)")
                    #expect(line.contains("auth_error=\(refusal)"), "\(testCase): \(line)")
                } else {
                    #expect(response.status == 200, "\(testCase)")
                    #expect(response.header("WWW-Authenticate") == nil, "\(testCase)")
                    #expect(line.contains("user_id=jwt:user-1"), "\(testCase)")
                    #expect(!line.contains("auth_error"), "\(testCase)")
                }
                let body = String(decoding: response.body, as: UTF8.self)
                let signature = String(token.split(separator: ".", omittingEmptySubsequences: false).last ?? "")
                #expect(!harness.logs.lines.joined().contains(token), "\(testCase)")
                if signature.count > 8 {
                    #expect(
                        !body.contains(signature) && !harness.logs.lines.joined().contains(signature), "\(testCase)")
                }
            }
        }
    }

    @Test("an app's JWT caller, a gateway token and no token: each as configured")
    func besideGatewayTokens() async throws {
        let file = storeDirectory() + "/jwks.json"
        try writeFile(file, try TestJWT.jwks([("rsa-1", Self.rsa)]))
        var configuration = try GatewayConfiguration(environment: ["JWT_JWKS_FILE": file])
        configuration.tokens = try TokenStore.parse(
            inline: "\(TokenStore.hashLine(forToken: "tg-listed-token-0123")):alice:default")
        let jwt = configuration.jwt
        let tokens = configuration.tokens
        #expect(configuration.requiresTokens)
        try await GatewayHarness.with(
            configure: {
                $0.jwt = jwt
                $0.tokens = tokens
            }, clock: { Instant(secondsSinceEpoch: TestJWT.now) }
        ) { harness async throws in
            let user = try TestJWT.signed(
                #"{"sub":"app-user","exp":\#(Int(TestJWT.now + 60))}"#, key: Self.rsa, kid: "rsa-1", algorithm: "RS256")
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("Authorization", "Bearer \(user)")]
                ).status == 200)
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("Authorization", "Bearer tg-listed-token-0123")]
                ).status == 200)
            let missing = try await harness.process(task: "summarize", text: Self.sample)
            #expect(missing.status == 401)
            #expect(missing.header("WWW-Authenticate") == "Bearer")
            let unknown = try await harness.process(
                task: "summarize", text: Self.sample, headers: [("Authorization", "Bearer tg-unknown")])
            #expect(unknown.status == 401)
            #expect(unknown.header("WWW-Authenticate") == #"Bearer error="invalid_token""#)
            // Only a JWKS: HS256 has no key at all, so a token signed with the public key as
            // its secret is refused by algorithm before any HMAC is computed.
            let confused = TestJWT.hs256(
                #"{"sub":"x","exp":\#(Int(TestJWT.now + 60))}"#, header: #"{"alg":"HS256","kid":"rsa-1"}"#,
                secret: Self.rsa.publicKey.derSubjectPublicKeyInfo)
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("Authorization", "Bearer \(confused)")]
                ).status == 401)
            await eventually("a line says auth_error=algorithm") {
                harness.logs.lines.contains { $0.contains("auth_error=algorithm") }
            }
        }
    }

    @Test("a JWT caller has its own usage and history in the store, under its sub and its plan")
    func usageAndHistory() async throws {
        let path = storeDirectory() + "/textgateway.sqlite"
        let configuration = try GatewayConfiguration(environment: [
            "JWT_HS256_SECRET": String(decoding: TestJWT.secret, as: UTF8.self), "PLANS": "pro:100:4:5000",
            "JWT_PLAN_CLAIM": "app_metadata.plan",
        ])
        let (jwt, plans) = (configuration.jwt, configuration.plans)
        let exp = Int(Instant.now.secondsSinceEpoch + 600)
        let mine = TestJWT.hs256(#"{"sub":"app-user-7","exp":\#(exp),"app_metadata":{"plan":"pro"}}"#)
        let theirs = TestJWT.hs256(#"{"sub":"app-user-8","exp":\#(exp)}"#)
        try await GatewayHarness.with(configure: {
            $0.jwt = jwt
            $0.plans = plans
            $0.database = .sqlite(path: path)
        }) { harness async throws in
            let answered = try await harness.process(
                task: "summarize", text: Self.sample,
                headers: [("Authorization", "Bearer \(mine)"), ("X-Request-Id", "jwt-row-1")])
            #expect(answered.status == 200)
            await eventually("the history has jwt-row-1") {
                let response = try? await harness.client.send(
                    HTTPClientRequest(
                        url: harness.base + "/api/history/jwt-row-1", headers: [("Authorization", "Bearer \(mine)")]
                    ))
                return response?.status == 200
            }
            let usage = try await harness.client.send(
                HTTPClientRequest(url: harness.base + "/api/usage", headers: [("Authorization", "Bearer \(mine)")]))
            let body = String(decoding: usage.body, as: UTF8.self)
            #expect(usage.status == 200)
            #expect(
                body.contains(#""userId":"jwt:app-user-7""#) && body.contains(#""plan":"pro""#)
                    && body.contains(#""tokensPerDay":5000"#))
            // Another user's token does not see the row.
            let other = try await harness.client.send(
                HTTPClientRequest(
                    url: harness.base + "/api/history/jwt-row-1", headers: [("Authorization", "Bearer \(theirs)")]))
            #expect(other.status == 404)
        }
    }

    @Test("an open gateway still refuses a bad JWT, and serves a good one as its user")
    func openGateway() async throws {
        var environment = ["JWT_HS256_SECRET": String(decoding: TestJWT.secret, as: UTF8.self), "AUTH_REQUIRED": "off"]
        environment["JWT_LEEWAY_SECONDS"] = "0"
        let configuration = try GatewayConfiguration(environment: environment)
        #expect(!configuration.requiresTokens)
        let jwt = configuration.jwt
        try await GatewayHarness.with(
            configure: {
                $0.jwt = jwt
                $0.authRequired = false
            }, clock: { Instant(secondsSinceEpoch: TestJWT.now) }
        ) { harness async throws in
            #expect(try await harness.process(task: "summarize", text: Self.sample).status == 200)
            // A key in none of the gateway's formats is a guest on /v1 only (ClosedByDefaultTests).
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("Authorization", "Bearer sk-placeholder")]
                ).status == 401)
            let expired = TestJWT.hs256(#"{"sub":"u","exp":\#(Int(TestJWT.now - 1))}"#)
            let refused = try await harness.process(
                task: "summarize", text: Self.sample, headers: [("Authorization", "Bearer \(expired)")])
            #expect(refused.status == 401)
            #expect(refused.header("WWW-Authenticate") == #"Bearer error="invalid_token""#)
        }
    }
}
