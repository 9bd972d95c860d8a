import AccessTestSupport
import Gateway
import HTTPClient
import JSON
import TestSupport
import Testing

@testable import Access
@testable import Telemetry

/// A credential that fails is refused on every configuration, an open gateway's guest rule is
/// narrow, and a request's worst case is bounded before it goes upstream.
@Suite("Closed by default: failed credentials, the guest rule, costs bounded before the call", .serialized)
struct ClosedByDefaultTests {
    typealias Value = JSONValue
    static let sample = ProcessEndToEndTests.sample
    static let invalidToken = #"Bearer error="invalid_token""#

    /// Credentials in the gateway's own formats that no configuration knows.
    static let failedCredentials: [(label: String, value: String)] = [
        ("unknown store token", "Bearer tgk_" + String(repeating: "A", count: 43)),
        ("unknown device session", "Bearer tgd_" + String(repeating: "B", count: 43)),
        ("JWT-shaped", "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJlcmluIn0.c2lnbmF0dXJl"),
        ("oversized", "Bearer " + String(repeating: "a", count: 20_000)),
        ("a space inside", "Bearer tgk_abc def"),
        ("empty", "Bearer"),
        ("a store token's prefix alone", "Bearer tgk_"),
        ("a device session's prefix alone", "Bearer tgd_"),
    ]

    static func chat(_ harness: GatewayHarness, _ body: String, authorization: String?) async throws
        -> HTTPClientResponse
    {
        var headers = [("Content-Type", "application/json")]
        if let authorization { headers.append(("Authorization", authorization)) }
        return try await harness.client.send(
            HTTPClientRequest(
                method: "POST", url: harness.base + "/v1/chat/completions", headers: headers, body: Array(body.utf8)))
    }

    static func models(_ harness: GatewayHarness, authorization: String?) async throws -> HTTPClientResponse {
        try await harness.client.send(
            HTTPClientRequest(
                url: harness.base + "/v1/models", headers: authorization.map { [("Authorization", $0)] } ?? []))
    }

    static let chatBody = #"{"model":"fast","messages":[{"role":"user","content":"Hello there"}]}"#

    static func openAI(_ configuration: inout GatewayConfiguration) {
        configuration.modelAliases = [("fast", "upstream-fast")]
    }

    @Test(
        "an open gateway refuses a failed credential of its formats on every route: invalid_token, upstream not called"
    )
    func openGatewayRefusesFailedCredentials() async throws {
        try await GatewayHarness.with(configure: Self.openAI) { harness in
            // no credential: a guest
            #expect(try await harness.process(task: "summarize", text: Self.sample).status == 200)
            let calls = harness.mock.stats.requests
            for (label, value) in Self.failedCredentials {
                let process = try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("Authorization", value)])
                #expect(process.status == 401, "\(label)")
                #expect(process.header("WWW-Authenticate") == Self.invalidToken, "\(label)")
                #expect(try Body(process).code == "unauthorized", "\(label)")
                let chat = try await Self.chat(harness, Self.chatBody, authorization: value)
                #expect(chat.status == 401, "\(label)")
                #expect(chat.header("WWW-Authenticate") == Self.invalidToken, "\(label)")
                #expect(try await Self.models(harness, authorization: value).status == 401, "\(label)")
            }
            #expect(harness.mock.stats.requests == calls)
            let log = harness.logs.lines.joined(separator: "\n")
            #expect(!log.contains("tgk_AAAA") && !log.contains("eyJhbGci"))
            #expect(log.contains("auth_error="))
            #expect(log.contains("malformed gateway credential"))
        }
    }

    @Test("an open gateway's guest rule: only /v1 takes a key in none of its formats (an SDK's placeholder) as a guest")
    func placeholderRule() async throws {
        try await GatewayHarness.with(configure: Self.openAI) { harness in
            for placeholder in ["Bearer sk-no-key-required", "Bearer EMPTY", "bearer not-needed"] {
                #expect(
                    try await Self.chat(harness, Self.chatBody, authorization: placeholder).status == 200,
                    "\(placeholder)")
                #expect(try await Self.models(harness, authorization: placeholder).status == 200, "\(placeholder)")
                // /api is the gateway's own API: its clients send a credential only when they have one.
                let process = try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("Authorization", placeholder)])
                #expect(process.status == 401, "\(placeholder)")
                #expect(process.header("WWW-Authenticate") == Self.invalidToken)
            }
            // Another scheme is no bearer credential (a proxy's own Basic sign-in, say).
            #expect(
                try await harness.process(
                    task: "summarize", text: Self.sample, headers: [("Authorization", "Basic dXNlcjpwYXNz")]
                ).status == 200)
        }
    }

    @Test(
        "tokens required: no credential is a plain Bearer challenge; any failed one (placeholders too) is invalid_token"
    )
    func requiredGateway() async throws {
        try await GatewayHarness.with(configure: {
            Self.openAI(&$0)
            $0.tokens = try! TokenStore.parse(
                inline: "\(TokenStore.hashLine(forToken: AccessEndToEndTests.token)):alice:default")
        }) { harness in
            let missing = try await Self.chat(harness, Self.chatBody, authorization: nil)
            #expect(missing.status == 401)
            #expect(missing.header("WWW-Authenticate") == "Bearer")
            for value in Self.failedCredentials.map(\.value) + ["Bearer sk-no-key-required", "Bearer wrong"] {
                let chat = try await Self.chat(harness, Self.chatBody, authorization: value)
                #expect(chat.status == 401)
                #expect(chat.header("WWW-Authenticate") == Self.invalidToken)
                #expect(
                    try await harness.process(task: "summarize", text: Self.sample, headers: [("Authorization", value)])
                        .header("WWW-Authenticate") == Self.invalidToken)
            }
            #expect(
                try await Self.chat(harness, Self.chatBody, authorization: "Bearer " + AccessEndToEndTests.token).status
                    == 200)
        }
    }

    @Test("a JWT's subject is jwt:<sub> everywhere: it never meets the gateway-token user of the same name")
    func identityNamespaces() async throws {
        let jwt = try GatewayConfiguration(environment: [
            "JWT_HS256_SECRET": String(decoding: TestJWT.secret, as: UTF8.self), "JWT_ISSUER": TestJWT.issuer,
            "JWT_AUDIENCE": TestJWT.audience,
        ]).jwt
        try await GatewayHarness.with(
            configure: {
                $0.tokens = try! TokenStore.parse(
                    inline: "\(TokenStore.hashLine(forToken: AccessEndToEndTests.token)):erin:default")
                $0.jwt = jwt
            }, clock: { Instant(secondsSinceEpoch: TestJWT.now) }
        ) { harness in
            let signed = TestJWT.hs256(TestJWT.claims(sub: "erin"))
            let viaJWT = try await harness.process(
                task: "summarize", text: Self.sample,
                headers: [("Authorization", "Bearer " + signed), ("X-Request-Id", "jwt-erin")])
            #expect(viaJWT.status == 200)
            let viaToken = try await harness.process(
                task: "summarize", text: Self.sample,
                headers: [("Authorization", "Bearer " + AccessEndToEndTests.token), ("X-Request-Id", "token-erin")])
            #expect(viaToken.status == 200)
            // The access line is written just after the answer.
            await eventually("the access line of request token-erin is written") {
                harness.logs.lines.contains { $0.contains("request_id=token-erin ") }
            }
            let lines = harness.logs.lines
            #expect(lines.first { $0.contains("request_id=jwt-erin ") }?.contains("user_id=jwt:erin ") == true)
            #expect(lines.first { $0.contains("request_id=token-erin ") }?.contains("user_id=erin ") == true)
        }
    }

    @Test(
        "/v1's n is capped at MAX_CHOICES; a request whose worst case does not fit the day is refused before upstream"
    )
    func costsBoundedBeforeTheCall() async throws {
        let clock = TestClock()
        try await GatewayHarness.with(
            configure: {
                Self.openAI(&$0)
                try? AccessEndToEndTests.configure(plans: "pro:-:-:2000", &$0)
                $0.maxTokens = 300
                $0.maxChoices = 8
            }, clock: { clock.now }
        ) { harness in
            let bearer = "Bearer " + AccessEndToEndTests.token
            let tooMany = try await Self.chat(
                harness, #"{"model":"fast","n":9,"messages":[{"role":"user","content":"Hi"}]}"#, authorization: bearer)
            #expect(tooMany.status == 400)
            #expect(try Value.parse(tooMany.body)["error"]?["param"] == .string("n"))
            // 8 answers of up to 300 tokens: 2400 > 2000, refused though nothing was spent yet.
            let worst = try await Self.chat(
                harness, #"{"model":"fast","n":8,"messages":[{"role":"user","content":"Hi"}]}"#, authorization: bearer)
            #expect(worst.status == 429)
            #expect(try Value.parse(worst.body)["error"]?["code"] == .string("rate_limited"))
            #expect(Int(worst.header("Retry-After") ?? "") ?? 0 > 60)
            #expect(worst.header("RateLimit-Remaining") == "2000")
            // max_tokens lowers the worst case: 8 × 100 fits.
            let capped = try await Self.chat(
                harness, #"{"model":"fast","n":8,"max_tokens":100,"messages":[{"role":"user","content":"Hi"}]}"#,
                authorization: bearer)
            #expect(capped.status == 200)
            #expect(harness.mock.stats.requests == 1)
            // The same for /api/process: its worst case is MAX_TOKENS and the text.
            clock.advance(86_400)
            // ~6 KB: ~2000 tokens by the estimate
            let long = String(repeating: "A long text that costs tokens. ", count: 200)
            let refused = try await harness.process(task: "summarize", text: long, headers: [("Authorization", bearer)])
            #expect(refused.status == 429)
            #expect(harness.mock.stats.requests == 1)
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, headers: [("Authorization", bearer)])
                    .status == 200)
        }
    }
}
