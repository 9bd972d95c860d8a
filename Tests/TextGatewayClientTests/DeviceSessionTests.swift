import Crypto
import Foundation
import Testing

@testable import TextGatewayClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The client under App Attest: a fake device and a fake gateway's attest routes on loopback.
@Suite("DeviceSession and the client under App Attest")
struct DeviceSessionTests {
    /// A client whose device session runs on `clock`.
    static func client(_ gateway: FakeAttestGateway, _ attestor: FakeAttestor, clock: TestClock = TestClock())
        -> TextGatewayClient
    {
        let session = DeviceSession(baseURL: gateway.baseURL, attestor: attestor, now: { clock.now })
        return TextGatewayClient(baseURL: gateway.baseURL, deviceSession: session)
    }

    @Test("the first call makes a key, registers it, opens a session and sends its token as the bearer")
    func firstCallRegisters() async throws {
        try await FakeAttestGateway.with { gateway in
            let attestor = FakeAttestor()
            let client = Self.client(gateway, attestor)
            let result = try await client.process(.summarize, text: sampleText())

            #expect(result.result == "answered for Bearer tgd_1")
            #expect(gateway.recorded.bearers == ["Bearer tgd_1"])
            #expect(gateway.recorded.registerCalls == 1)
            #expect(gateway.recorded.sessionCalls == 1)
            #expect(gateway.recorded.issued.count == 2)
            let device = attestor.recorded
            #expect(device.generated.count == 1)
            #expect(device.attested.map(\.keyId) == device.generated)
            #expect(device.asserted.map(\.keyId) == device.generated)
            #expect(
                device.saved == [
                    DeviceKey(id: device.generated[0], isRegistered: false),
                    DeviceKey(id: device.generated[0], isRegistered: true),
                ])
            #expect(await client.deviceSession?.deviceId == "dev-1")
        }
    }

    @Test("the device signs SHA-256 of each challenge's UTF-8 bytes")
    func clientDataHashIsSHA256OfChallenge() async throws {
        try await FakeAttestGateway.with { gateway in
            let attestor = FakeAttestor()
            _ = try await Self.client(gateway, attestor).process(.summarize, text: sampleText())
            let issued = gateway.recorded.issued
            let signed =
                attestor.recorded.attested.map(\.clientDataHash) + attestor.recorded.asserted.map(\.clientDataHash)
            #expect(signed == issued.map { Data(Crypto.SHA256.hash($0.utf8)) })
            #expect(signed.allSatisfy { $0.count == 32 })
        }
    }

    @Test("a second call reuses the session: no challenge, no assertion")
    func secondCallReusesSession() async throws {
        try await FakeAttestGateway.with { gateway in
            let attestor = FakeAttestor()
            let client = Self.client(gateway, attestor)
            _ = try await client.process(.summarize, text: sampleText())
            _ = try await client.process(.rewrite, text: sampleText())
            #expect(gateway.recorded.bearers == ["Bearer tgd_1", "Bearer tgd_1"])
            #expect(gateway.recorded.issued.count == 2)
            #expect(gateway.recorded.sessionCalls == 1)
            #expect(attestor.recorded.asserted.count == 1)
        }
    }

    @Test("a session is renewed when less than five minutes of its hour remain, on the stored key")
    func renewsNearExpiry() async throws {
        try await FakeAttestGateway.with { gateway in
            let attestor = FakeAttestor()
            let clock = TestClock()
            let client = Self.client(gateway, attestor, clock: clock)
            _ = try await client.process(.summarize, text: sampleText())
            clock.advance(seconds: 3000)
            _ = try await client.process(.summarize, text: sampleText())
            #expect(gateway.recorded.sessionCalls == 1)
            clock.advance(seconds: 400)
            _ = try await client.process(.summarize, text: sampleText())
            #expect(gateway.recorded.bearers == ["Bearer tgd_1", "Bearer tgd_1", "Bearer tgd_2"])
            #expect(gateway.recorded.sessionCalls == 2)
            #expect(gateway.recorded.registerCalls == 1)
            #expect(attestor.recorded.generated.count == 1)
            #expect(attestor.recorded.attested.count == 1)
            #expect(attestor.recorded.asserted.count == 2)
        }
    }

    @Test("concurrent calls share one registration and one renewal")
    func concurrentCallsShareOneRenewal() async throws {
        try await FakeAttestGateway.with { gateway in
            gateway.update { $0.sessionDelay = .milliseconds(200) }
            let attestor = FakeAttestor()
            let clock = TestClock()
            let client = Self.client(gateway, attestor, clock: clock)
            func callConcurrently() async throws {
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for _ in 0..<8 { group.addTask { _ = try await client.process(.summarize, text: sampleText()) } }
                    try await group.waitForAll()
                }
            }
            try await callConcurrently()
            #expect(gateway.recorded.registerCalls == 1)
            #expect(gateway.recorded.sessionCalls == 1)
            #expect(Set(gateway.recorded.bearers) == ["Bearer tgd_1"])

            clock.advance(seconds: 3500)
            try await callConcurrently()
            #expect(gateway.recorded.sessionCalls == 2)
            #expect(gateway.recorded.bearers.suffix(8).allSatisfy { $0 == "Bearer tgd_2" })
            #expect(attestor.recorded.asserted.count == 2)
        }
    }

    @Test("409 on register means the gateway has the key already: the session opens on it")
    func registerConflictCarriesOn() async throws {
        try await FakeAttestGateway.with { gateway in
            let keyId = Data("lost-answer-key".utf8).base64EncodedString()
            gateway.update { $0.devices[keyId] = "dev-earlier" }
            let attestor = FakeAttestor(stored: DeviceKey(id: keyId, isRegistered: false))
            let client = Self.client(gateway, attestor)
            _ = try await client.process(.summarize, text: sampleText())
            #expect(gateway.recorded.registerCalls == 1)
            #expect(gateway.recorded.sessionCalls == 1)
            #expect(attestor.recorded.generated.isEmpty)
            #expect(attestor.recorded.stored == DeviceKey(id: keyId, isRegistered: true))
            #expect(await client.deviceSession?.deviceId == "dev-earlier")
        }
    }

    @Test(
        "a key registered by an attempt whose answer was lost: not attested again; the session opens on it"
    )
    func lostRegistrationAnswer() async throws {
        try await FakeAttestGateway.with { gateway in
            let keyId = Data("sent-once-key".utf8).base64EncodedString()
            gateway.update { $0.devices[keyId] = "dev-earlier" }
            let attestor = FakeAttestor(stored: DeviceKey(id: keyId, isRegistered: false), attestedKeys: [keyId])
            let client = Self.client(gateway, attestor)
            _ = try await client.process(.summarize, text: sampleText())
            #expect(gateway.recorded.registerCalls == 0)
            #expect(gateway.recorded.sessionCalls == 1)
            #expect(attestor.recorded.generated.isEmpty)
            #expect(attestor.recorded.stored == DeviceKey(id: keyId, isRegistered: true))

            // The same, but the gateway never got it: one session refused, then a new key.
            let lost = Data("never-arrived-key".utf8).base64EncodedString()
            let other = FakeAttestor(stored: DeviceKey(id: lost, isRegistered: false), attestedKeys: [lost])
            _ = try await Self.client(gateway, other).process(.summarize, text: sampleText())
            #expect(other.recorded.asserted.map(\.keyId) == [lost] + other.recorded.generated)
            #expect(other.recorded.generated.count == 1)
            #expect(gateway.recorded.registerCalls == 1)
            #expect(other.recorded.stored == DeviceKey(id: other.recorded.generated[0], isRegistered: true))
        }
    }

    @Test("401 invalid_token on a call renews the session once and sends the call once more")
    func refusedTokenRenewsOnce() async throws {
        try await FakeAttestGateway.with { gateway in
            let attestor = FakeAttestor()
            let client = Self.client(gateway, attestor)
            _ = try await client.process(.summarize, text: sampleText())

            gateway.update { $0.refuseCalls = 1 }
            let result = try await client.process(.summarize, text: sampleText())
            #expect(result.result == "answered for Bearer tgd_2")
            #expect(gateway.recorded.bearers == ["Bearer tgd_1", "Bearer tgd_1", "Bearer tgd_2"])
            #expect(gateway.recorded.sessionCalls == 2)

            gateway.update { $0.refuseCalls = 2 }
            let error = await #expect(throws: TextGatewayError.self) {
                try await client.process(.summarize, text: sampleText())
            }
            #expect(error?.status == 401)
            #expect(error?.isTokenRefused == true)
            #expect(gateway.recorded.bearers.suffix(2) == ["Bearer tgd_2", "Bearer tgd_3"])
            #expect(gateway.recorded.bearers.count == 5)
            #expect(gateway.recorded.sessionCalls == 3)
            #expect(gateway.recorded.registerCalls == 1)
        }
    }

    @Test("a stream refused with 401 invalid_token is renewed and sent once more")
    func refusedStreamRenewsOnce() async throws {
        try await FakeAttestGateway.with { gateway in
            let client = Self.client(gateway, FakeAttestor())
            _ = try await client.process(.summarize, text: sampleText())
            gateway.update { $0.refuseCalls = 1 }
            var events: [StreamEvent] = []
            for try await event in client.stream(.summarize, text: sampleText()) { events.append(event) }
            guard case .done(let result)? = events.last else {
                Issue.record("the stream did not end with done: \(events)")
                return
            }
            #expect(result.result == "answered for Bearer tgd_2")
            #expect(gateway.recorded.bearers == ["Bearer tgd_1", "Bearer tgd_1", "Bearer tgd_2"])

            gateway.update { $0.refuseCalls = 2 }
            let error = await #expect(throws: TextGatewayError.self) {
                for try await _ in client.stream(.summarize, text: sampleText()) {}
            }
            #expect(error?.isTokenRefused == true)
            #expect(gateway.recorded.bearers.count == 5)
        }
    }

    @Test("a key the device lost (invalidKey) is forgotten, replaced and registered")
    func invalidKeyMakesNewKey() async throws {
        try await FakeAttestGateway.with { gateway in
            let lost = Data("restored-key".utf8).base64EncodedString()
            gateway.update { $0.devices[lost] = "dev-restored" }
            let attestor = FakeAttestor(stored: DeviceKey(id: lost, isRegistered: true), invalidKeys: [lost])
            let client = Self.client(gateway, attestor)
            let result = try await client.process(.summarize, text: sampleText())
            #expect(result.result == "answered for Bearer tgd_1")
            let device = attestor.recorded
            #expect(device.asserted.map(\.keyId) == [lost] + device.generated)
            #expect(device.generated.count == 1)
            #expect(device.attested.map(\.keyId) == device.generated)
            #expect(device.saved.first == .some(nil))
            #expect(device.stored == DeviceKey(id: device.generated[0], isRegistered: true))
            #expect(gateway.recorded.registerCalls == 1)
            #expect(await client.deviceSession?.deviceId == "dev-2")
        }
    }

    @Test("a key the gateway does not know (401 on session) is replaced once; a second refusal is thrown")
    func unknownKeyIsReplacedOnce() async throws {
        try await FakeAttestGateway.with { gateway in
            let unknown = Data("never-registered-here".utf8).base64EncodedString()
            let attestor = FakeAttestor(stored: DeviceKey(id: unknown, isRegistered: true))
            _ = try await Self.client(gateway, attestor).process(.summarize, text: sampleText())
            #expect(gateway.recorded.sessionCalls == 2)
            #expect(gateway.recorded.registerCalls == 1)
            #expect(attestor.recorded.generated.count == 1)
            #expect(attestor.recorded.asserted.map(\.keyId) == [unknown] + attestor.recorded.generated)
        }
        try await FakeAttestGateway.with { gateway in
            // A device whose every key the device rejects: two keys tried, then the error.
            let attestor = FakeAttestor(invalidKeys: [
                Data("device-key-1".utf8).base64EncodedString(), Data("device-key-2".utf8).base64EncodedString(),
            ])
            await #expect(throws: DeviceAttestationError.invalidKey) {
                _ = try await Self.client(gateway, attestor).process(.summarize, text: sampleText())
            }
            #expect(attestor.recorded.generated.count == 2)
            #expect(attestor.recorded.attested.count == 2)
            #expect(gateway.recorded.registerCalls == 0)
            #expect(gateway.recorded.bearers.isEmpty)
        }
    }

    @Test("a challenge that expired on the way is fetched again, once, and the key is kept")
    func expiredChallengeKeepsKey() async throws {
        try await FakeAttestGateway.with { gateway in
            let attestor = FakeAttestor()
            let client = Self.client(gateway, attestor)
            _ = try await client.process(.summarize, text: sampleText())
            let key = try #require(attestor.recorded.stored)
            // The session expires; the next one's challenge expires on the way once.
            gateway.update {
                $0.tokens = [:]
                $0.expireChallenges = 1
            }
            _ = try await client.process(.summarize, text: sampleText())
            #expect(attestor.recorded.stored == key)
            #expect(attestor.recorded.generated.count == 1)
            #expect(gateway.recorded.registerCalls == 1)
            // Twice in a row: thrown, the key still kept.
            gateway.update {
                $0.tokens = [:]
                $0.expireChallenges = 2
            }
            let error = await #expect(throws: TextGatewayError.self) {
                _ = try await client.process(.summarize, text: sampleText())
            }
            #expect(error?.attestError == "challenge")
            #expect(attestor.recorded.stored == key && attestor.recorded.generated.count == 1)
        }
    }

    @Test("a session refused for a reason a new key cannot change is thrown, and the key is kept")
    func otherRefusalKeepsKey() async throws {
        try await FakeAttestGateway.with { gateway in
            let attestor = FakeAttestor()
            let client = Self.client(gateway, attestor)
            _ = try await client.process(.summarize, text: sampleText())
            let key = try #require(attestor.recorded.stored)
            gateway.update {
                $0.tokens = [:]
                $0.refuseApp = 1
            }
            let error = await #expect(throws: TextGatewayError.self) {
                _ = try await client.process(.summarize, text: sampleText())
            }
            #expect(error?.status == 401 && error?.attestError == "app_id")
            #expect(attestor.recorded.stored == key)
            #expect(attestor.recorded.generated.count == 1 && gateway.recorded.registerCalls == 1)
        }
    }

    @Test("an attestation the gateway refuses is thrown as it came, with no new key")
    func refusedAttestationIsThrown() async throws {
        try await FakeAttestGateway.with { gateway in
            gateway.update { $0.refuseAttestations = true }
            let attestor = FakeAttestor()
            let error = await #expect(throws: TextGatewayError.self) {
                _ = try await Self.client(gateway, attestor).process(.summarize, text: sampleText())
            }
            #expect(error?.status == 401)
            #expect(error?.code == "unauthorized")
            #expect(attestor.recorded.generated.count == 1)
            #expect(attestor.recorded.stored == DeviceKey(id: attestor.recorded.generated[0], isRegistered: false))
            #expect(gateway.recorded.sessionCalls == 0)
            #expect(gateway.recorded.bearers.isEmpty)
        }
    }

    @Test(
        "a session's renewal time: five minutes before its end, a tenth of a short one, counted by the gateway's Date")
    func renewalDate() {
        let received = Date(timeIntervalSince1970: 2_000_000_000)
        let hour = DeviceSession.renewalDate(expiresAt: received + 3600, serverDate: nil, receivedAt: received)
        #expect(hour == received + 3300)
        let tenMinutes = DeviceSession.renewalDate(expiresAt: received + 600, serverDate: nil, receivedAt: received)
        #expect(tenMinutes == received + 540)
        // A device clock an hour fast: the session still lasts its hour from when it came.
        let skewed = DeviceSession.renewalDate(expiresAt: received, serverDate: received - 3600, receivedAt: received)
        #expect(skewed == received + 3300)
        let past = DeviceSession.renewalDate(expiresAt: received - 10, serverDate: nil, receivedAt: received)
        #expect(past == received)
    }

    @Test("WWW-Authenticate Bearer error=invalid_token marks a 401 as a refused token")
    func tokenRefusal() throws {
        func error(_ status: Int, _ challenge: String?) throws -> TextGatewayError {
            let response = try #require(
                HTTPURLResponse(
                    url: URL(string: "http://gateway.test/api/process")!, statusCode: status, httpVersion: "HTTP/1.1",
                    headerFields: challenge.map { ["WWW-Authenticate": $0] } ?? [:]
                ))
            return TextGatewayClient.error(
                status: status, body: Array(#"{"code":"unauthorized","message":"no"}"#.utf8), headers: response)
        }
        #expect(try error(401, #"Bearer error="invalid_token""#).isTokenRefused)
        #expect(try error(401, #"Bearer realm="gateway", error="invalid_token""#).isTokenRefused)
        #expect(try !error(401, "Bearer").isTokenRefused)
        #expect(try !error(401, nil).isTokenRefused)
        #expect(try !error(403, #"Bearer error="invalid_token""#).isTokenRefused)
    }
}
