import AccessTestSupport
import ChatAPI
import Crypto
import Foundation
import GatewayCommandLine
import HTTPClient
import Store
import Synchronization
import TestSupport
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

/// Android devices through the gateway's HTTP routes: the real chains registered or refused as
/// their fixtures say, then the whole flow (beside a real iPhone) on SQLite and Postgres.
@Suite("Android devices end to end", .serialized)
struct AndroidAttestEndToEndTests {
    /// A clock a test moves: each real chain is verified at its own `verifyAt`.
    final class MovableClock: Sendable {
        private let now = Mutex(Instant(secondsSinceEpoch: 0))
        func set(_ seconds: Int64) { now.withLock { $0 = Instant(secondsSinceEpoch: Double(seconds)) } }
        var instant: Instant { now.withLock { $0 } }
    }

    static func post(_ harness: GatewayHarness, _ path: String, _ body: String) async throws -> HTTPClientResponse {
        try await AppAttestEndToEndTests.post(harness, path, body)
    }

    static func registerBody(chain: [[UInt8]], challenge: String) -> String {
        let certificates = chain.map { "\"\(StandardBase64.encode($0))\"" }.joined(separator: ",")
        return #"{"challenge":"\#(challenge)","chain":[\#(certificates)]}"#
    }

    /// Puts `bytes` (as the gateway writes challenges: base64url) where challenges wait.
    static func issue(_ bytes: [UInt8], at seconds: Int64, location: DatabaseLocation) async throws -> String {
        let challenge = Base64URL.encode(bytes)
        try await withStore(location) { store in
            try await store.insertChallenge(challenge, expiresAtMilliseconds: seconds * 1000 + 300_000)
        }
        return challenge
    }

    /// Every real chain's packages with their digests: each chain's own are allowed.
    static func allFixtureApps() throws -> [String: [[UInt8]]] {
        var apps: [String: [[UInt8]]] = [:]
        for fixture in try AndroidChainFixture.all() {
            for package in fixture.packages { apps[package, default: []] += fixture.digests }
        }
        return apps
    }

    static func configure(
        _ configuration: inout GatewayConfiguration, location: DatabaseLocation, android: AndroidAttestSettings,
        appIDs: [String] = [], requirement: AppAttestSettings.Requirement = .guests
    ) {
        configuration.database = location
        var settings = AppAttestSettings(appIDs: appIDs)
        settings.environment = .development
        settings.requirement = requirement
        settings.android = android
        configuration.appAttest = settings
        configuration.rateLimitsEnabled = true
        configuration.plans = (try? PlanCatalog.parse("device:60:4:1000000")) ?? PlanCatalog()
    }

    static func attestError(_ response: HTTPClientResponse) -> String? {
        (try? StoreEndToEndTests.json(response))?["attestError"]?.stringValue
    }

    /// Registers every real chain at its `verifyAt` through the route; what each answered.
    static func registerRealChains(
        policy: (AndroidAttestationPolicy) -> AndroidAttestationPolicy = { $0 }, revocationFile: String? = nil,
        time: ((AndroidChainFixture) -> Int64)? = nil, challenge: ((AndroidChainFixture) -> [UInt8])? = nil
    ) async throws -> [String: (status: Int, attestError: String?)] {
        let location = DatabaseLocation.sqlite(path: storeDirectory() + "/gateway.sqlite")
        var android = AndroidAttestSettings(policy: policy(AndroidAttestationPolicy(apps: try allFixtureApps())))
        android.revocationFile = revocationFile
        let clock = MovableClock()
        var answers: [String: (status: Int, attestError: String?)] = [:]
        try await GatewayHarness.with(
            configure: { configure(&$0, location: location, android: android) }, clock: { clock.instant }
        ) { harness in
            for fixture in try AndroidChainFixture.all() {
                let at = time?(fixture) ?? fixture.verifyAt
                clock.set(at)
                // The chain's own challenge, or the one a variant sends instead.
                let sent = try await issue(challenge?(fixture) ?? fixture.challenge, at: at, location: location)
                let response = try await post(
                    harness, "/api/attest/android/register", registerBody(chain: fixture.chain, challenge: sent))
                answers[fixture.name] = (response.status, attestError(response))
                if response.status == 401 {
                    let reason = attestError(response) ?? "?"
                    await AppAttestEndToEndTests.logged(harness, "attest_error=\(reason)", for: fixture.name)
                }
            }
            // Nothing of a chain reaches the log.
            let log = harness.logs.lines.joined(separator: "\n")
            for fixture in try AndroidChainFixture.all() {
                #expect(!log.contains(String(StandardBase64.encode(fixture.chain[0]).prefix(40))))
            }
        }
        return answers
    }

    @Test("each real chain registers or is refused through the route as its fixture says, for its reason")
    func realChains() async throws {
        let answers = try await Self.registerRealChains()
        for fixture in try AndroidChainFixture.all() {
            let answer = try #require(answers[fixture.name])
            if fixture.verdict == "accept" {
                #expect(answer.status == 201, "\(fixture.name): \(answer)")
            } else {
                #expect(answer.status == 401, "\(fixture.name): \(answer)")
                #expect(
                    answer.attestError == AndroidChainFixture.refusals[fixture.name]?.reference.rawValue,
                    "\(fixture.name): \(answer)")
            }
        }
    }

    @Test("with ANDROID_ATTEST_ALLOW_UNLOCKED, the unlocked test phones register too; the others are refused as before")
    func realChainsRelaxed() async throws {
        let answers = try await Self.registerRealChains(policy: {
            var policy = $0
            policy.requireLockedBootloader = false
            return policy
        })
        for fixture in try AndroidChainFixture.all() {
            let answer = try #require(answers[fixture.name])
            if let relaxed = AndroidChainFixture.refusals[fixture.name]?.relaxed {
                #expect(answer.status == 401 && answer.attestError == relaxed.rawValue, "\(fixture.name): \(answer)")
            } else {
                #expect(answer.status == 201, "\(fixture.name): \(answer)")
            }
        }
    }

    @Test("variants through the route: wrong challenge, clock after the RKP expiry, revoked serial, app not listed")
    func realChainVariants() async throws {
        let relax: (AndroidAttestationPolicy) -> AndroidAttestationPolicy = {
            var policy = $0
            policy.requireLockedBootloader = false
            return policy
        }
        let wrong = try await Self.registerRealChains(policy: relax, challenge: { $0.challenge + [1] })
        let expired = try await Self.registerRealChains(policy: relax, time: { _ in 1_797_292_800 })
        // Every chain's attestation-key certificate on the list.
        let file = storeDirectory() + "/revocations.json"
        let entries = Set(try AndroidChainFixture.all().map(\.serials[1])).sorted().map {
            #""\#($0)":{"status":"REVOKED"}"#
        }
        try Data(#"{"entries":{\#(entries.joined(separator: ","))}}"#.utf8).write(to: URL(fileURLWithPath: file))
        let revoked = try await Self.registerRealChains(policy: relax, revocationFile: file)
        // Each chain's package allowed with another digest only; its digests for another package only.
        let otherDigest = try await Self.registerRealChains(policy: {
            var policy = relax($0)
            policy.apps = $0.apps.mapValues { _ in [[UInt8](repeating: 0xEE, count: 32)] }
            return policy
        })
        let otherPackage = try await Self.registerRealChains(policy: {
            var policy = relax($0)
            policy.apps = ["com.example.not.listed": $0.apps.values.flatMap { $0 }]
            return policy
        })
        for fixture in try AndroidChainFixture.all()
        where AndroidChainFixture.refusals[fixture.name]?.relaxed == nil {
            #expect(otherDigest[fixture.name]?.attestError == "app", "\(fixture.name)")
            #expect(otherPackage[fixture.name]?.attestError == "app", "\(fixture.name)")
            #expect(wrong[fixture.name]?.attestError == "challenge", "\(fixture.name)")
            #expect(
                expired[fixture.name]?.attestError == (fixture.provisioning == "rkp" ? "validity" : nil),
                "\(fixture.name)")
            #expect(revoked[fixture.name]?.attestError == "revoked", "\(fixture.name)")
        }
    }

    // MARK: The whole flow, beside a real iPhone

    /// Inside the real iPhone's leaf validity; the synthetic Android root is made around it.
    static let now = AppAttestEndToEndTests.attestedAt

    struct AndroidPhone {
        let device: SyntheticAndroidAttestation.Device
        var keyID: String { StandardBase64.encode(device.keyID) }
    }

    static func challenge(_ harness: GatewayHarness) async throws -> String {
        let response = try await post(harness, "/api/attest/challenge", "{}")
        return try #require(try StoreEndToEndTests.json(response)["challenge"]?.stringValue)
    }

    static func registerAndroid(
        _ harness: GatewayHarness, _ authority: SyntheticAndroidAttestation, _ phone: AndroidPhone
    ) async throws -> HTTPClientResponse {
        let challenge = try await challenge(harness)
        let bytes = try #require(Base64URL.decode(challenge.utf8))
        let chain = try authority.chain(phone.device, challenge: bytes)
        return try await post(harness, "/api/attest/android/register", registerBody(chain: chain, challenge: challenge))
    }

    static func androidSession(
        _ harness: GatewayHarness, _ phone: AndroidPhone, signer: SyntheticAndroidAttestation.Device? = nil,
        challenge given: String? = nil
    ) async throws -> HTTPClientResponse {
        let challenge: String
        if let given {
            challenge = given
        } else {
            challenge = try await Self.challenge(harness)
        }
        let signature = StandardBase64.encode(try (signer ?? phone.device).sessionSignature(challenge: challenge))
        return try await post(
            harness, "/api/attest/android/session",
            #"{"keyId":"\#(phone.keyID)","challenge":"\#(challenge)","signature":"\#(signature)"}"#)
    }

    static func android(_ authority: SyntheticAndroidAttestation, apps: [String: [[UInt8]]]? = nil)
        -> AndroidAttestSettings
    {
        var settings = AndroidAttestSettings(
            policy: AndroidAttestationPolicy(
                apps: apps ?? [SyntheticAndroidAttestation.package: [SyntheticAndroidAttestation.signingDigest]]))
        settings.extraRoot = ("synthetic-android-root.pem", authority.root.certificate.pem)
        return settings
    }

    static func bothPlatforms(location: DatabaseLocation) async throws {
        let authority = try SyntheticAndroidAttestation(notBefore: Int64(now.secondsSinceEpoch) - 86_400)
        let phone = AndroidPhone(device: try SyntheticAndroidAttestation.Device())
        let settings = android(authority)
        func configureBoth(_ configuration: inout GatewayConfiguration) {
            configure(
                &configuration, location: location, android: settings, appIDs: [RealDeviceFixture.appID])
        }
        var androidToken = ""
        var androidDevice = ""
        try await GatewayHarness.with(configure: configureBoth, clock: { now }) { harness in
            // A guest is refused where devices are required.
            #expect(try await harness.process(task: "titles", text: ProcessEndToEndTests.sample).status == 401)

            // The iPhone, as App Attest's own tests do it.
            try await AppAttestEndToEndTests.issueFixtureChallenge(location)
            #expect(try await AppAttestEndToEndTests.register(harness).status == 201)
            try await AppAttestEndToEndTests.issueFixtureChallenge(location)
            let iosOpened = try await AppAttestEndToEndTests.session(harness)
            #expect(iosOpened.status == 200)
            let iosToken = try #require(try StoreEndToEndTests.json(iosOpened)["token"]?.stringValue)

            // The Android phone registers, and its key id is what the app computes.
            let registered = try await registerAndroid(harness, authority, phone)
            #expect(registered.status == 201, "\(String(decoding: registered.body, as: UTF8.self))")
            let body = try StoreEndToEndTests.json(registered)
            androidDevice = try #require(body["deviceId"]?.stringValue)
            #expect(body["keyId"]?.stringValue == phone.keyID)
            #expect(try await registerAndroid(harness, authority, phone).status == 409)

            let opened = try await androidSession(harness, phone)
            #expect(opened.status == 200, "\(String(decoding: opened.body, as: UTF8.self))")
            androidToken = try #require(try StoreEndToEndTests.json(opened)["token"]?.stringValue)
            #expect(androidToken.hasPrefix("tgd_"))

            // A replayed session challenge, a session signed by another key, an unknown key.
            let used = try await challenge(harness)
            #expect(try await androidSession(harness, phone, challenge: used).status == 200)
            let replay = try await androidSession(harness, phone, challenge: used)
            #expect(replay.status == 401 && attestError(replay) == "challenge")
            let other = try SyntheticAndroidAttestation.Device()
            let forged = try await androidSession(harness, phone, signer: other)
            #expect(forged.status == 401 && attestError(forged) == "signature")
            let stranger = try await androidSession(harness, AndroidPhone(device: other))
            #expect(stranger.status == 401 && attestError(stranger) == "unknown_device")
            await AppAttestEndToEndTests.logged(harness, "attest_error=unknown_device")

            // Each is a caller of its own, with its own usage.
            for token in [iosToken, androidToken] {
                let answered = try await harness.process(
                    task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(token))
                #expect(answered.status == 200)
            }
            let androidUsage = try StoreEndToEndTests.json(
                try await StoreEndToEndTests.get(harness, "/api/usage", token: androidToken))
            #expect(androidUsage["userId"]?.stringValue == "device:" + androidDevice)
            #expect(androidUsage["plan"]?.stringValue == "device")
            let iosUsage = try StoreEndToEndTests.json(
                try await StoreEndToEndTests.get(harness, "/api/usage", token: iosToken))
            #expect(iosUsage["userId"]?.stringValue != androidUsage["userId"]?.stringValue)
            #expect(!harness.logs.lines.joined().contains(androidToken))
        }
        // A restart keeps the devices and the sessions.
        try await GatewayHarness.with(configure: configureBoth, clock: { now }) { harness in
            let answered = try await harness.process(
                task: "titles", text: ProcessEndToEndTests.sample, headers: StoreEndToEndTests.bearer(androidToken))
            #expect(answered.status == 200)
            #expect(try await androidSession(harness, phone).status == 200)
            let devices = try await withStore(location) { try await $0.devices() }
            #expect(devices.map(\.platform.rawValue).sorted() == ["android", "ios"])
            var configuration = GatewayConfiguration()
            configureBoth(&configuration)
            let listed = await StoreCommand.listDevices(format: .json).run(configuration: configuration)
            #expect(
                listed.output.contains("\"platform\":\"android\"")
                    || listed.output.contains("\"platform\": \"android\""))
        }
        // The package taken off the list: its device opens no session, though registered.
        try await GatewayHarness.with(
            configure: {
                configure(
                    &$0, location: location,
                    android: android(
                        authority, apps: ["com.example.other": [SyntheticAndroidAttestation.signingDigest]]))
            }, clock: { now }
        ) { harness in
            let refused = try await androidSession(harness, phone)
            #expect(refused.status == 401 && attestError(refused) == "app")
        }
    }

    @Test("SQLite: an iPhone and an Android phone each have sessions of their own; guests refused; restarts keep both")
    func bothPlatformsSQLite() async throws {
        try await Self.bothPlatforms(location: .sqlite(path: storeDirectory() + "/gateway.sqlite"))
    }

    @Test("a client address registers at most APP_ATTEST_REGISTRATIONS_PER_ADDRESS_PER_DAY devices a day: 429 after")
    func registrationLimit() async throws {
        let authority = try SyntheticAndroidAttestation(notBefore: Int64(Self.now.secondsSinceEpoch) - 86_400)
        let location = DatabaseLocation.sqlite(path: storeDirectory() + "/gateway.sqlite")
        let clock = MovableClock()
        clock.set(Int64(Self.now.secondsSinceEpoch))
        try await GatewayHarness.with(
            configure: {
                Self.configure(&$0, location: location, android: Self.android(authority))
                $0.appAttest?.registrationsPerAddressPerDay = 2
            }, clock: { clock.instant }
        ) { harness in
            for _ in 0..<2 {
                let phone = AndroidPhone(device: try SyntheticAndroidAttestation.Device())
                #expect(try await Self.registerAndroid(harness, authority, phone).status == 201)
            }
            let third = try await Self.registerAndroid(harness, authority, AndroidPhone(device: try .init()))
            #expect(third.status == 429)
            #expect(third.header("Retry-After") == "86400")
            #expect(try StoreEndToEndTests.json(third)["code"]?.stringValue == "rate_limited")
            // A day later the window has moved on.
            clock.set(Int64(Self.now.secondsSinceEpoch) + 86_401)
            #expect(try await Self.registerAndroid(harness, authority, AndroidPhone(device: try .init())).status == 201)
            #expect(try await withStore(location) { try await $0.devices() }.count == 3)
        }
    }
}

extension AndroidAttestEndToEndTests {
    @Test("the revocation list: fetched from its URL at start and written to its file; kept when the URL fails")
    func revocationList() async throws {
        let authority = try SyntheticAndroidAttestation(notBefore: Int64(Self.now.secondsSinceEpoch) - 86_400)
        let serial = try X509Certificate(
            der: try authority.chain(try SyntheticAndroidAttestation.Device(), challenge: [1])[1]
        ).serialHex
        let listed = #"{"entries":{"\#(serial)":{"status":"REVOKED","reason":"KEY_COMPROMISE"}}}"#
        let server = try await KeySetServer.start(#"{"entries":{}}"#)
        let directory = storeDirectory()
        let location = DatabaseLocation.sqlite(path: directory + "/gateway.sqlite")
        var settings = Self.android(authority)
        settings.revocationURL = server.url
        settings.revocationFile = directory + "/revocations.json"
        func metric(_ harness: GatewayHarness, _ name: String) async throws -> Double? {
            let text = try await JWKSSourceTests.metrics(harness)
            return text.split(separator: "\n").first { $0.hasPrefix(name + " ") || $0.hasPrefix(name + "{") }
                .flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
        }
        try await GatewayHarness.with(
            configure: { Self.configure(&$0, location: location, android: settings) }, clock: { Self.now }
        ) { harness in
            // At start: an empty list, so the chain registers.
            let phone = AndroidPhone(device: try SyntheticAndroidAttestation.Device())
            #expect(try await Self.registerAndroid(harness, authority, phone).status == 201)
            #expect(try await metric(harness, "textgateway_android_revocation_list_entries") == 0)
            // Google lists the phone's attestation key: the next refresh refuses its chains.
            server.serve(listed)
            #expect(await harness.running.gateway.androidRevocations?.refresh() == true)
            let refused = try await Self.registerAndroid(
                harness, authority, AndroidPhone(device: try SyntheticAndroidAttestation.Device()))
            #expect(refused.status == 401 && Self.attestError(refused) == "revoked")
            #expect(try await metric(harness, "textgateway_android_revocation_list_entries") == 1)
            let age = try #require(try await metric(harness, "textgateway_android_revocation_list_age_seconds"))
            #expect(age >= 0 && age < 5)
            let written = try String(contentsOfFile: directory + "/revocations.json", encoding: .utf8)
            #expect(written == listed)
        }
        // The URL down: the start still serves, with the file's list in force.
        await server.stop()
        try await GatewayHarness.with(
            configure: { Self.configure(&$0, location: location, android: settings) }, clock: { Self.now }
        ) { harness in
            let refused = try await Self.registerAndroid(
                harness, authority, AndroidPhone(device: try SyntheticAndroidAttestation.Device()))
            #expect(refused.status == 401 && Self.attestError(refused) == "revoked")
            let text = try await JWKSSourceTests.metrics(harness)
            #expect(text.contains(#"textgateway_android_revocation_refreshes_total{result="failed"} 1"#))
            await AppAttestEndToEndTests.logged(harness, "android_revocation_refresh_failed")
        }
    }

    @Test("an iPhone whose App ID is taken off APP_ATTEST_APP_IDS opens no session, though registered")
    func iosConfigurationAtSession() async throws {
        let location = DatabaseLocation.sqlite(path: storeDirectory() + "/gateway.sqlite")
        try await GatewayHarness.with(
            configure: { AppAttestEndToEndTests.configure(&$0, location: location) },
            clock: { AppAttestEndToEndTests.attestedAt }
        ) { harness in
            try await AppAttestEndToEndTests.issueFixtureChallenge(location)
            #expect(try await AppAttestEndToEndTests.register(harness).status == 201)
        }
        try await GatewayHarness.with(
            configure: {
                AppAttestEndToEndTests.configure(&$0, location: location)
                $0.appAttest?.appIDs = ["ABCDE12345.com.example.other"]
            }, clock: { AppAttestEndToEndTests.attestedAt }
        ) { harness in
            try await AppAttestEndToEndTests.issueFixtureChallenge(location)
            let refused = try await AppAttestEndToEndTests.session(harness)
            #expect(refused.status == 401 && Self.attestError(refused) == "app_id")
        }
        try await GatewayHarness.with(
            configure: {
                AppAttestEndToEndTests.configure(&$0, location: location)
                $0.appAttest?.environment = .production
            }, clock: { AppAttestEndToEndTests.attestedAt }
        ) { harness in
            try await AppAttestEndToEndTests.issueFixtureChallenge(location)
            let refused = try await AppAttestEndToEndTests.session(harness)
            #expect(refused.status == 401 && Self.attestError(refused) == "environment")
        }
    }
}

@Suite("Android devices end to end on Postgres", .postgresCluster)
struct AndroidAttestPostgresTests {
    @Test(
        "Postgres: an iPhone and an Android phone each have sessions of their own; guests refused; restarts keep both")
    func bothPlatformsPostgres() async throws {
        try await AndroidAttestEndToEndTests.bothPlatforms(
            location: try DatabaseLocation(url: try await PostgresStoreEndToEndTests.databaseURL()))
    }
}
