import AccessTestSupport
import Crypto
import GatewayCommandLine
import HTTPClient
import JSON
import Redis
import Store
import TestSupport
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// Every refusal of the App Attest flow through the HTTP routes, with synthetic devices under
/// a test root trusted beside Apple's (what `APP_ATTEST_EXTRA_ROOT_CA_FILE` does under
/// `--env testing`).
@Suite("App Attest refusals: one change at a time, each 401 with its reason in the log", .serialized)
struct AppAttestRefusalTests {
    static func configure(
        _ configuration: inout GatewayConfiguration, path: String, authority: SyntheticAppAttest,
        plans: String = "device:60:8:-"
    ) {
        configuration.database = .sqlite(path: path)
        var settings = AppAttestSettings(appIDs: [SyntheticAppAttest.appID])
        settings.environment = .development
        settings.requirement = .guests
        settings.extraRoot = ("synthetic-root.pem", authority.root.certificate.pem)
        configuration.appAttest = settings
        configuration.rateLimitsEnabled = true
        configuration.plans = (try? PlanCatalog.parse(plans)) ?? PlanCatalog()
    }

    static func base64(_ bytes: [UInt8]) -> String { StandardBase64.encode(bytes) }

    static func challenge(_ harness: GatewayHarness) async throws -> String {
        let response = try await AppAttestEndToEndTests.post(harness, "/api/attest/challenge", "")
        #expect(response.status == 200)
        return try #require(try StoreEndToEndTests.json(response)["challenge"]?.stringValue)
    }

    static func register(_ harness: GatewayHarness, keyID: [UInt8], attestation: [UInt8], challenge: String)
        async throws -> HTTPClientResponse
    {
        try await AppAttestEndToEndTests.post(
            harness, "/api/attest/register",
            """
            {"keyId":"\(base64(keyID))","attestation":"\(base64(attestation))","challenge":"\(challenge)"}
            """)
    }

    static func session(_ harness: GatewayHarness, keyID: [UInt8], assertion: [UInt8], challenge: String) async throws
        -> HTTPClientResponse
    {
        try await AppAttestEndToEndTests.post(
            harness, "/api/attest/session",
            """
            {"keyId":"\(base64(keyID))","assertion":"\(base64(assertion))","challenge":"\(challenge)"}
            """)
    }

    /// Registers `device` and returns its device id.
    static func enrol(_ harness: GatewayHarness, _ authority: SyntheticAppAttest, _ device: SyntheticAppAttest.Device)
        async throws -> String
    {
        let challenge = try await challenge(harness)
        let attestation = try authority.attestation(
            device, challenge: challenge, now: Int64(Instant.now.secondsSinceEpoch))
        let response = try await register(harness, keyID: device.keyID, attestation: attestation, challenge: challenge)
        #expect(response.status == 201, "\(harness.logs.lines.suffix(2))")
        return try #require(try StoreEndToEndTests.json(response)["deviceId"]?.stringValue)
    }

    /// Opens a session for `device` with `counter`; returns its token.
    static func open(
        _ harness: GatewayHarness, _ authority: SyntheticAppAttest, _ device: SyntheticAppAttest.Device, counter: UInt32
    ) async throws -> String {
        let challenge = try await challenge(harness)
        let assertion = try authority.assertion(device, challenge: challenge, counter: counter)
        let response = try await session(harness, keyID: device.keyID, assertion: assertion, challenge: challenge)
        #expect(response.status == 200, "\(harness.logs.lines.suffix(2))")
        return try #require(try StoreEndToEndTests.json(response)["token"]?.stringValue)
    }

    /// Expects `response` to be `401` and the log to name `reason` for the request.
    static func expectRefused(
        _ response: HTTPClientResponse, _ reason: String, _ harness: GatewayHarness, _ what: String
    ) async throws {
        #expect(response.status == 401, "\(what)")
        let id = response.header("X-Request-Id") ?? "?"
        await eventually(
            "\(what): the line of request \(id) with attest_error=\(reason); the last: \(harness.logs.lines.suffix(1))"
        ) {
            harness.logs.lines.contains {
                $0.contains("request_id=\(id) ") && $0.contains("attest_error=\(reason)")
            }
        }
    }

    @Test(
        "registration: a wrong app, environment, nonce, counter, chain, validity, key id, format, CBOR or size fails"
    )
    func registrationRefusals() async throws {
        let now = Int64(Instant.now.secondsSinceEpoch)
        let authority = try SyntheticAppAttest(notBefore: now - 86_400)
        let stranger = try SyntheticAppAttest(notBefore: now - 86_400, name: "Another Root")
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: storeDirectory() + "/gateway.sqlite", authority: authority)
        }) { harness in
            typealias Changes = SyntheticAppAttest.Changes
            func change(_ body: (inout Changes) -> Void) -> Changes {
                var changes = Changes()
                body(&changes)
                return changes
            }
            let other = try SyntheticAppAttest.Device()
            let cases: [(String, Changes, String)] = [
                ("another app's id", change { $0.appID = "ABCDE12345.example.other" }, "app_id"),
                (
                    "the production environment where development is allowed",
                    change { $0.aaguid = AppAttestVerifier.productionAAGUID }, "environment"
                ),
                ("an unknown AAGUID", change { $0.aaguid = Array("attestunknownxxx".utf8) }, "environment"),
                ("a nonce over other data", change { $0.nonceOver = Array("other data".utf8) }, "nonce"),
                ("a counter of 1", change { $0.counter = 1 }, "counter"),
                ("a chain to another root", change { $0.issuer = stranger.intermediate }, "chain"),
                (
                    "an expired leaf",
                    change {
                        $0.leafNotBefore = now - 3 * 86_400
                        $0.leafNotAfter = now - 86_400
                    }, "chain"
                ),
                (
                    "a leaf not yet valid",
                    change {
                        $0.leafNotBefore = now + 86_400
                        $0.leafNotAfter = now + 2 * 86_400
                    }, "chain"
                ),
                ("a credential id that is not the key id", change { $0.credentialID = other.keyID }, "key_id"),
                ("a leaf holding another key", change { $0.leafKey = other.key.publicKey }, "key_id"),
                ("a format other than apple-appattest", change { $0.fmt = "packed" }, "format"),
            ]
            for (what, changes, reason) in cases {
                let device = try SyntheticAppAttest.Device()
                let challenge = try await Self.challenge(harness)
                let attestation = try authority.attestation(device, challenge: challenge, now: now, changes: changes)
                try await Self.expectRefused(
                    try await Self.register(
                        harness, keyID: device.keyID, attestation: attestation, challenge: challenge), reason, harness,
                    what
                )
            }
            let device = try SyntheticAppAttest.Device()
            func attempt(keyID: [UInt8]? = nil, _ bytes: ([UInt8]) -> [UInt8], _ reason: String, _ what: String)
                async throws
            {
                let challenge = try await Self.challenge(harness)
                let attestation = bytes(try authority.attestation(device, challenge: challenge, now: now))
                try await Self.expectRefused(
                    try await Self.register(
                        harness, keyID: keyID ?? device.keyID, attestation: attestation, challenge: challenge), reason,
                    harness, what
                )
            }
            try await attempt(keyID: other.keyID, { $0 }, "key_id", "another key's id")
            try await attempt({ Array($0.prefix($0.count / 2)) }, "malformed", "a truncated attestation")
            try await attempt({ _ in [0xBF, 0x61, 0x61, 0x01, 0xFF] }, "malformed", "indefinite-length CBOR")
            try await attempt({ _ in Array(repeating: 0x9B, count: 16) }, "malformed", "an array claiming 2^64 items")
            try await attempt({ _ in Array(repeating: 0x81, count: 40_000) }, "malformed", "CBOR nested 40,000 deep")
            try await attempt(
                { _ in [UInt8](repeating: 0x41, count: 70_000) }, "malformed", "an attestation over 64 KiB of base64")

            // A challenge the gateway never issued, and one used already.
            let attestation = try authority.attestation(device, challenge: "never-issued", now: now)
            try await Self.expectRefused(
                try await Self.register(
                    harness, keyID: device.keyID, attestation: attestation, challenge: "never-issued"), "challenge",
                harness, "unknown challenge"
            )
            // Bodies that are not the JSON object: 400, not 401.
            for body in [
                "", "[]", "{\"keyId\":1,\"attestation\":\"\",\"challenge\":\"\"}",
                "{\"keyId\":\"a\",\"challenge\":\"b\"}", "{not json",
            ] {
                let response = try await AppAttestEndToEndTests.post(harness, "/api/attest/register", body)
                #expect(response.status == 400, "\(body)")
                #expect(try StoreEndToEndTests.json(response)["code"]?.stringValue == "invalid_json")
            }
            // Nothing was registered by any of this.
            #expect(
                try await withStore(harness.running.gateway.configuration.database) { try await $0.devices() }.isEmpty)

            // A good one, with the extension data newer iOS versions append, registers; its key again is 409.
            let good = try SyntheticAppAttest.Device()
            let challenge = try await Self.challenge(harness)
            let extended = try authority.attestation(
                good, challenge: challenge, now: now, changes: change { $0.extensionData = true })
            #expect(
                try await Self.register(harness, keyID: good.keyID, attestation: extended, challenge: challenge).status
                    == 201)
            let again = try await Self.challenge(harness)
            let repeated = try await Self.register(
                harness, keyID: good.keyID, attestation: try authority.attestation(good, challenge: again, now: now),
                challenge: again)
            #expect(repeated.status == 409)
            #expect(try StoreEndToEndTests.json(repeated)["code"]?.stringValue == "device_already_registered")
        }
    }

    @Test(
        "sessions: a replayed counter, other data, key or app, an unknown key fail; of two with one counter, one wins"
    )
    func sessionRefusals() async throws {
        let now = Int64(Instant.now.secondsSinceEpoch)
        let authority = try SyntheticAppAttest(notBefore: now - 86_400)
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: storeDirectory() + "/gateway.sqlite", authority: authority)
        }) { harness in
            let device = try SyntheticAppAttest.Device()
            _ = try await Self.enrol(harness, authority, device)
            _ = try await Self.open(harness, authority, device, counter: 5)
            func attempt(keyID: [UInt8]? = nil, _ make: (String) throws -> [UInt8], _ reason: String, _ what: String)
                async throws
            {
                let challenge = try await Self.challenge(harness)
                try await Self.expectRefused(
                    try await Self.session(
                        harness, keyID: keyID ?? device.keyID, assertion: try make(challenge), challenge: challenge),
                    reason, harness, what
                )
            }
            try await attempt(
                { try authority.assertion(device, challenge: $0, counter: 5) }, "counter", "the same counter again")
            try await attempt(
                { try authority.assertion(device, challenge: $0, counter: 4) }, "counter", "a lower counter")
            try await attempt(
                { try authority.assertion(device, challenge: $0, counter: 6, signedOver: Array("other".utf8)) },
                "signature", "over other data")
            try await attempt(
                { try authority.assertion(device, challenge: $0, counter: 6, signer: try PrivateKey.generateP256()) },
                "signature", "another key")
            try await attempt(
                { try authority.assertion(device, challenge: $0, counter: 6, appID: "ABCDE12345.example.other") },
                "app_id", "another app")
            try await attempt(
                keyID: try SyntheticAppAttest.Device().keyID,
                { try authority.assertion(device, challenge: $0, counter: 6) }, "unknown_device", "an unknown key")
            try await attempt({ _ in [0xA2, 0x69] }, "malformed", "truncated CBOR")
            // The digest signed as if it were the message (a nonce hashed once, not twice): refused.
            try await attempt(
                { challenge in
                    let authenticatorData = SHA256.hash(Array(SyntheticAppAttest.appID.utf8)) + [0x01, 0, 0, 0, 7]
                    let nonce = SHA256.hash(authenticatorData + SHA256.hash(Array(challenge.utf8)))
                    let signature = try device.key.signature(for: SHA256.hash(nonce), algorithm: .ecdsaP256SHA256DER)
                    return CBORWriter.encode(
                        .map([
                            (.text("signature"), .bytes(signature)),
                            (.text("authenticatorData"), .bytes(authenticatorData)),
                        ]))
                }, "signature", "a signature over the digest of the nonce")

            // Two assertions with one counter at once: exactly one opens a session.
            let first = try await Self.challenge(harness)
            let second = try await Self.challenge(harness)
            let a = try authority.assertion(device, challenge: first, counter: 9)
            let b = try authority.assertion(device, challenge: second, counter: 9)
            async let one = Self.session(harness, keyID: device.keyID, assertion: a, challenge: first)
            async let two = Self.session(harness, keyID: device.keyID, assertion: b, challenge: second)
            let statuses = [try await one.status, try await two.status].sorted()
            #expect(statuses == [200, 401])
            #expect(
                try await withStore(harness.running.gateway.configuration.database) {
                    try await $0.device(keyID: device.keyID)
                }?.counter == 9)
        }
    }

    @Test(
        "devices are callers (own limits; guests 401); a revoked device's sessions stop on every instance within 2 s"
    )
    func callersAndRevocation() async throws {
        let now = Int64(Instant.now.secondsSinceEpoch)
        let authority = try SyntheticAppAttest(notBefore: now - 86_400)
        let path = storeDirectory() + "/gateway.sqlite"
        // Two requests a minute per device.
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: path, authority: authority, plans: "device:2:8:-")
        }) { harness in
            #expect(try await harness.process(task: "titles", text: ProcessEndToEndTests.sample).status == 401)
            let alpha = try SyntheticAppAttest.Device()
            let beta = try SyntheticAppAttest.Device()
            let alphaID = try await Self.enrol(harness, authority, alpha)
            _ = try await Self.enrol(harness, authority, beta)
            let alphaToken = try await Self.open(harness, authority, alpha, counter: 1)
            let betaToken = try await Self.open(harness, authority, beta, counter: 1)
            func process(_ token: String) async throws -> Int {
                try await harness.process(
                    task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(token)
                ).status
            }
            #expect(try await process(alphaToken) == 200)
            #expect(try await process(alphaToken) == 200)
            #expect(try await process(alphaToken) == 429)
            // Beta's minute is its own.
            #expect(try await process(betaToken) == 200)
            #expect(try await process("tgd_" + Base64URL.encode(SecureRandom.bytes(32))) == 401)

            // Another instance on the same store serves the session it never opened.
            try await harness.peer(configure: {
                Self.configure(&$0, path: path, authority: authority, plans: "device:60:8:-")
            }) { peer in
                let served = try await peer.process(
                    task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(alphaToken))
                #expect(served.status == 200)
                let configuration = harness.running.gateway.configuration
                #expect(await StoreCommand.revokeDevice(id: alphaID).run(configuration: configuration).status == 0)
                let listed = await StoreCommand.listDevices(format: .json).run(configuration: configuration)
                #expect(listed.output.contains(alphaID) && !listed.output.contains("receipt"))
                // Both instances come to refuse it (each follows the store by its device poll); beta is unaffected.
                await eventually("the other instance refuses alpha's revoked device session") {
                    let there = try? await peer.process(
                        task: "titles", text: ProcessEndToEndTests.sample,
                        headers: StoreEndToEndTests.bearer(alphaToken))
                    return there?.status == 401
                        && there?.header("WWW-Authenticate") == #"Bearer error="invalid_token""#
                }
                await eventually("the first instance refuses alpha's revoked device session") {
                    (try? await process(alphaToken)) == 401
                }
                let betaThere = try await peer.process(
                    task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(betaToken))
                #expect(betaThere.status == 200)
                // A revoked device opens no new session.
                let challenge = try await Self.challenge(harness)
                try await Self.expectRefused(
                    try await Self.session(
                        harness, keyID: alpha.keyID,
                        assertion: try authority.assertion(alpha, challenge: challenge, counter: 2),
                        challenge: challenge),
                    "unknown_device", harness, "a revoked device"
                )
            }
        }
    }

    @Test(
        "APP_ATTEST_REQUIRED=all serves only device sessions; attest routes are limited per address with Retry-After"
    )
    func onlyDevicesAndLimits() async throws {
        let now = Int64(Instant.now.secondsSinceEpoch)
        let authority = try SyntheticAppAttest(notBefore: now - 86_400)
        let token = "tg-all-token-0123456789"
        try await GatewayHarness.with(configure: {
            Self.configure(&$0, path: storeDirectory() + "/gateway.sqlite", authority: authority)
            $0.appAttest?.requirement = .all
            $0.appAttest?.requestsPerMinute = 6
            $0.tokens = try? TokenStore.parse(inline: "\(TokenStore.hashLine(forToken: token)):erin:default")
        }) { harness in
            let device = try SyntheticAppAttest.Device()
            _ = try await Self.enrol(harness, authority, device) // 2 requests
            let session = try await Self.open(harness, authority, device, counter: 1) // 4
            #expect(
                try await harness.process(
                    task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(session)
                ).status == 200)
            // A valid gateway token is not a device.
            #expect(
                try await harness.process(
                    task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(token)
                ).status == 401)
            #expect(try await harness.process(task: "titles", text: ProcessEndToEndTests.sample).status == 401)
            _ = try await Self.challenge(harness) // 5
            _ = try await Self.challenge(harness) // 6
            let refused = try await AppAttestEndToEndTests.post(harness, "/api/attest/challenge", "")
            #expect(refused.status == 429)
            #expect(Int(refused.header("Retry-After") ?? "") ?? 0 >= 1)
            // The device's own requests are not the address's attest budget.
            #expect(
                try await harness.process(
                    task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(session)
                ).status == 200)
        }
    }
}

@Suite("App Attest challenges in Redis: issued by one instance, taken once by any", .serialized)
struct AppAttestRedisTests {
    @Test("with REDIS_URL a challenge from one instance registers on another (whose store never saw it), once")
    func challengesInRedis() async throws {
        let redis = try await RedisServer()
        let now = Int64(Instant.now.secondsSinceEpoch)
        let authority = try SyntheticAppAttest(notBefore: now - 86_400)
        func configure(_ configuration: inout GatewayConfiguration) {
            AppAttestRefusalTests.configure(
                &configuration, path: storeDirectory() + "/gateway.sqlite", authority: authority)
            configuration.redis = try? RedisConfiguration(url: redis.url)
            // Generous: a loaded machine's slow reply must not be taken for Redis away (503).
            configuration.redis?.timeout = .seconds(5)
        }
        try await GatewayHarness.with(configure: configure) { first in
            try await first.peer(configure: configure) { second in
                let device = try SyntheticAppAttest.Device()
                let challenge = try await AppAttestRefusalTests.challenge(first)
                let attestation = try authority.attestation(device, challenge: challenge, now: now)
                let registered = try await AppAttestRefusalTests.register(
                    second, keyID: device.keyID, attestation: attestation, challenge: challenge)
                #expect(registered.status == 201, "\(second.logs.lines.suffix(2))")
                let again = try await AppAttestRefusalTests.register(
                    first, keyID: device.keyID, attestation: attestation, challenge: challenge)
                try await AppAttestRefusalTests.expectRefused(
                    again, "challenge", first, "a challenge used on the other instance")
            }
        }
        redis.kill()
    }
}

/// Standard base64 with padding, as `Data.base64EncodedString()` writes it.
enum StandardBase64 {
    static func encode(_ bytes: [UInt8]) -> String {
        var text = Array(Base64URL.encode(bytes).utf8).map {
            $0 == UInt8(ascii: "-") ? UInt8(ascii: "+") : $0 == UInt8(ascii: "_") ? UInt8(ascii: "/") : $0
        }
        while text.count % 4 != 0 { text.append(UInt8(ascii: "=")) }
        return String(decoding: text, as: UTF8.self)
    }
}
