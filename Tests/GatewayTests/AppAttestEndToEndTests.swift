import AccessTestSupport
import ChatAPI
import EventLoop
import HTTPClient
import Postgres
import Store
import TestSupport
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// A store of the gateway's configuration opened beside the running gateway, as another
/// process on it would (the command line, another instance).
func withStore<T>(_ location: DatabaseLocation, _ body: (any StoreBackend) async throws -> T) async throws -> T {
    switch location {
    case .sqlite(let path):
        let pool = try BlockingPool(threadCount: 1, name: "test-store")
        let store = try await SQLiteStore.open(path: path, pool: pool)
        do {
            let value = try await body(store)
            await store.close()
            await pool.shutdown()
            return value
        } catch {
            await store.close()
            await pool.shutdown()
            throw error
        }
    case .postgres(let configuration):
        let group = try EventLoopGroup(loopCount: 1, namePrefix: "test-store")
        let client = PostgresClient(configuration: configuration, group: group, name: "test_store")
        try await client.start()
        let result: Result<T, any Error>
        do {
            let store = try await PostgresStore.open(client: client, readOnly: false, startTimeout: .seconds(5))
            result = .success(try await body(store))
        } catch {
            result = .failure(error)
        }
        await client.stop(deadline: MonotonicInstant.now().advanced(by: .seconds(5)))
        await group.shutdownGracefully()
        return try result.get()
    case .off:
        throw StoreError(.unavailable, message: "no store")
    }
}

/// The App Attest flow through the gateway's HTTP routes, with a real iPhone's attestation
/// and assertion (Tests/GatewayTests/Fixtures/app-attest/README.md).
@Suite("App Attest end to end: a real device registers, opens a session and is a caller of its own", .serialized)
struct AppAttestEndToEndTests {
    static let fixture = RealDeviceFixture.load()
    /// Inside the leaf's validity: when the device made the attestation.
    static let attestedAt = Instant(secondsSinceEpoch: 1_611_404_013)

    static func configure(
        _ configuration: inout GatewayConfiguration, location: DatabaseLocation,
        requirement: AppAttestSettings.Requirement = .guests
    ) {
        configuration.database = location
        var settings = AppAttestSettings(appIDs: [RealDeviceFixture.appID])
        settings.environment = .development
        settings.requirement = requirement
        configuration.appAttest = settings
        configuration.rateLimitsEnabled = true
        configuration.plans = (try? PlanCatalog.parse("device:60:4:1000000")) ?? PlanCatalog()
    }

    /// Waits until an access-log line (written just after the answer) contains `text`; a test
    /// issue at the caller's line, naming `what` it was for, when none does.
    static func logged(
        _ harness: GatewayHarness, _ text: String, for what: String? = nil,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async {
        await eventually(
            "\(what.map { "\($0): " } ?? "")a log line contains \(text)", sourceLocation: sourceLocation
        ) { harness.logs.lines.contains { $0.contains(text) } }
    }

    static func post(_ harness: GatewayHarness, _ path: String, _ body: String) async throws -> HTTPClientResponse {
        try await harness.client.send(
            HTTPClientRequest(
                method: "POST", url: harness.base + path, headers: [("Content-Type", "application/json")],
                body: Array(body.utf8)
            ))
    }

    /// Puts the fixture's client data where the gateway's challenges wait, as if it had issued it.
    static func issueFixtureChallenge(_ location: DatabaseLocation) async throws {
        try await withStore(location) { store in
            try await store.insertChallenge(
                RealDeviceFixture.clientData,
                expiresAtMilliseconds: Int64(attestedAt.secondsSinceEpoch * 1000) + 300_000
            )
        }
    }

    static func register(_ harness: GatewayHarness, challenge: String = RealDeviceFixture.clientData) async throws
        -> HTTPClientResponse
    {
        try await post(
            harness, "/api/attest/register",
            """
            {"keyId":"\(fixture.keyID)","attestation":"\(fixture.attestation)","challenge":"\(challenge)"}
            """)
    }

    static func session(_ harness: GatewayHarness, challenge: String = RealDeviceFixture.clientData) async throws
        -> HTTPClientResponse
    {
        try await post(
            harness, "/api/attest/session",
            """
            {"keyId":"\(fixture.keyID)","assertion":"\(fixture.assertion)","challenge":"\(challenge)"}
            """)
    }

    static func realDevice(location: DatabaseLocation) async throws {
        try await GatewayHarness.with(configure: { configure(&$0, location: location) }, clock: { attestedAt }) {
            harness in
            // A guest is refused where devices are required.
            let guest = try await harness.process(task: "titles", text: ProcessEndToEndTests.sample)
            #expect(guest.status == 401)

            // An issued challenge has the documented shape.
            let issued = try StoreEndToEndTests.json(try await post(harness, "/api/attest/challenge", "{}"))
            let challenge = try #require(issued["challenge"]?.stringValue)
            #expect(challenge.utf8.count == 43 && Base64URL.decode(challenge.utf8)?.count == 32)
            #expect(issued["expiresAt"]?.intValue == Int(attestedAt.secondsSinceEpoch) + 300)
            // The device attested other data than this challenge: refused, nothing registered.
            let other = try await register(harness, challenge: challenge)
            #expect(other.status == 401)
            await logged(harness, "attest_error=nonce")
            // A challenge is used once, even by a refusal.
            #expect(try await register(harness, challenge: challenge).status == 401)
            await logged(harness, "attest_error=challenge")

            try await issueFixtureChallenge(location)
            let registered = try await register(harness)
            #expect(
                registered.status == 201, "\(String(decoding: registered.body, as: UTF8.self)) \(harness.logs.lines)")
            let deviceID = try #require(try StoreEndToEndTests.json(registered)["deviceId"]?.stringValue)
            try await issueFixtureChallenge(location)
            #expect(try await register(harness).status == 409)

            try await issueFixtureChallenge(location)
            let opened = try await session(harness)
            #expect(opened.status == 200, "\(String(decoding: opened.body, as: UTF8.self)) \(harness.logs.lines)")
            let body = try StoreEndToEndTests.json(opened)
            let token = try #require(body["token"]?.stringValue)
            #expect(token.hasPrefix("tgd_"))
            #expect(body["deviceId"]?.stringValue == deviceID)
            #expect(body["expiresAt"]?.intValue == Int(attestedAt.secondsSinceEpoch) + 3600)

            // The same assertion again (its counter is not above the stored one): refused.
            try await issueFixtureChallenge(location)
            #expect(try await session(harness).status == 401)
            await logged(harness, "attest_error=counter")

            // The session is a caller of its own, on the device plan.
            let answered = try await harness.process(
                task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(token))
            #expect(answered.status == 200)
            let usage = try StoreEndToEndTests.json(
                try await StoreEndToEndTests.get(harness, "/api/usage", token: token))
            #expect(usage["userId"]?.stringValue == "device:" + deviceID)
            #expect(usage["plan"]?.stringValue == "device")
            // Nothing of the attestation reaches the log.
            let log = harness.logs.lines.joined(separator: "\n")
            #expect(!log.contains(String(fixture.attestation.prefix(40))))
            #expect(!log.contains(token))
        }
        // A restart keeps the device and its counter: the replay is still refused, the session still serves.
        try await GatewayHarness.with(configure: { configure(&$0, location: location) }, clock: { attestedAt }) {
            harness in
            try await issueFixtureChallenge(location)
            #expect(try await session(harness).status == 401)
            await logged(harness, "attest_error=counter")
            let devices = try await withStore(location) { try await $0.devices() }
            #expect(devices.count == 1)
            #expect(devices.first?.counter == 1)
            #expect(devices.first?.appID == RealDeviceFixture.appID)
            #expect(devices.first?.environment == "development")
        }
    }

    @Test(
        "SQLite: the real device registers, has a session as device:<id> with its own usage, no replay; restarts"
    )
    func realDeviceSQLite() async throws {
        try await Self.realDevice(location: .sqlite(path: storeDirectory() + "/gateway.sqlite"))
    }
}

@Suite("App Attest end to end on Postgres", .postgresCluster)
struct AppAttestPostgresTests {
    @Test(
        "Postgres: the real device registers, has a session as device:<id> with its own usage, no replay; restarts"
    )
    func realDevicePostgres() async throws {
        try await AppAttestEndToEndTests.realDevice(
            location: try DatabaseLocation(url: try await PostgresStoreEndToEndTests.databaseURL()))
    }
}

/// The real device's fixture (``AppAttestFixture``) as the app sends it: standard base64.
struct RealDeviceFixture {
    static let appID = AppAttestFixture.appID
    /// The client data the device attested and asserted (`wurzelpfropf`).
    static let clientData = "wurzelpfropf"

    let keyID: String
    let attestation: String
    let assertion: String

    static func load() -> RealDeviceFixture {
        let values = try? AppAttestFixture.load()
        return RealDeviceFixture(
            keyID: StandardBase64.encode(values?.keyID ?? []),
            attestation: StandardBase64.encode(values?.attestation ?? []),
            assertion: StandardBase64.encode(values?.assertion ?? [])
        )
    }
}
