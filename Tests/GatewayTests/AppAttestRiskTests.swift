import AccessTestSupport
import Crypto
import HTTP1
import HTTPClient
import HTTPServer
import JSON
import Store
import Synchronization
import TestSupport
import Testing

@testable import Access
@testable import Gateway
@testable import Telemetry

/// A local stand-in of Apple's App Attest data server (`/v1/attestationData`): it checks the
/// gateway's JWT as Apple would (ES256 by the operator's key, its `kid`, the team as `iss`),
/// takes the base64 receipt, and answers what the test says: a new receipt with a risk metric,
/// signed under the synthetic root (which the gateway trusts beside Apple's only in tests), or a status.
final class AppleRiskStandIn: Sendable {
    enum Answer: Sendable {
        case receipt(metric: Int, devicePublicKey: PublicKey)
        case status(Int)
    }

    private struct State {
        var answers: [Answer] = []
        var requests = 0
        var refusedTokens = 0
        var bodies: [[UInt8]] = []
    }

    private let state = Mutex(State())
    private let server: HTTPServer
    let url: String

    private init(server: HTTPServer, url: String) {
        self.server = server
        self.url = url
    }

    static func start(
        operatorKey: PublicKey, keyID: String, team: String, authority: SyntheticAppAttest, appID: String
    ) async throws -> AppleRiskStandIn {
        var configuration = ServerConfiguration()
        configuration.port = 0
        configuration.loopCount = 1
        let box = Mutex<AppleRiskStandIn?>(nil)
        let signerKey = try PrivateKey.generateP256()
        let signer = CertificateIssuer(
            certificate: try authority.intermediate.issue(
                CertificateFields(
                    commonName: "Receipt Signing (test)", serialNumber: 9, notBefore: 0, notAfter: 4_000_000_000,
                    isCertificateAuthority: false, keyUsage: [.digitalSignature]),
                for: signerKey.publicKey),
            key: signerKey)
        let server = try HTTPServer(configuration: configuration) { request in
            guard let standIn = box.withLock({ $0 }) else { return HTTPResponse(status: .serviceUnavailable) }
            guard
                Self.isValid(
                    token: request.headers["Authorization"] ?? "", key: operatorKey, keyID: keyID, team: team)
            else {
                standIn.state.withLock { $0.refusedTokens += 1 }
                return HTTPResponse(status: .unauthorized)
            }
            let answer = standIn.state.withLock { state -> Answer? in
                state.requests += 1
                state.bodies.append(request.body)
                return state.answers.isEmpty ? nil : state.answers.removeFirst()
            }
            guard Base64URL.decodeStandard(request.body) != nil else { return HTTPResponse(status: .badRequest) }
            switch answer {
            case .receipt(let metric, let devicePublicKey):
                typealias DER = SyntheticAndroidAttestation.DER
                let attested = try authority.intermediate.issue(
                    CertificateFields(
                        commonName: "attested key", serialNumber: 10, notBefore: 0, notAfter: 4_000_000_000,
                        isCertificateAuthority: false, keyUsage: [.digitalSignature]),
                    for: devicePublicKey)
                func field(_ type: Int64, _ value: [UInt8]) -> [UInt8] {
                    DER.sequence(DER.integer(type) + DER.integer(1) + DER.octetString(value))
                }
                let content = DER.set(
                    field(2, Array(appID.utf8)) + field(3, attested.der) + field(6, Array("RECEIPT".utf8))
                        + field(17, Array(String(metric).utf8)))
                let receipt = try CMSSignedData.sign(
                    content, signer: signer, certificates: [authority.intermediate.certificate])
                return HTTPResponse(status: .ok, body: .bytes(Array(Base64URL.encodeStandard(receipt).utf8)))
            case .status(let code):
                return HTTPResponse(status: HTTPStatus(code: code))
            case nil:
                return HTTPResponse(status: .internalServerError)
            }
        }
        let address = try await server.start()
        let standIn = AppleRiskStandIn(server: server, url: "http://127.0.0.1:\(address.port)/v1/attestationData")
        box.withLock { $0 = standIn }
        return standIn
    }

    /// Whether `token` is a JWT Apple's server would take: ES256 by `key`, `kid`, `iss`, `iat`.
    static func isValid(token: String, key: PublicKey, keyID: String, team: String) -> Bool {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Base64URL.decode(parts[0].utf8),
            let claimBytes = Base64URL.decode(parts[1].utf8), let signature = Base64URL.decode(parts[2].utf8),
            let header = try? JSONValue.parse(headerBytes), let claims = try? JSONValue.parse(claimBytes)
        else { return false }
        return header["alg"]?.stringValue == "ES256" && header["kid"]?.stringValue == keyID
            && claims["iss"]?.stringValue == team && claims["iat"]?.intValue != nil
            && key.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8), algorithm: .ecdsaP256SHA256)
    }

    func answer(_ answer: Answer) { state.withLock { $0.answers.append(answer) } }
    var requests: Int { state.withLock { $0.requests } }
    var refusedTokens: Int { state.withLock { $0.refusedTokens } }
    var bodies: [[UInt8]] { state.withLock { $0.bodies } }
    func stop() async { await server.shutdown(gracePeriod: .zero) }
}

@Suite("App Attest: Apple's risk metric for each new iPhone, against a local stand-in of Apple's server", .serialized)
struct AppAttestRiskTests {
    static let keyID = "RISKKEY123"

    @Test("a new iPhone's metric is asked for and kept; over APP_ATTEST_RISK_MAXIMUM the device is revoked")
    func riskMetric() async throws {
        let authority = try SyntheticAppAttest(notBefore: Int64(Instant.now.secondsSinceEpoch) - 86_400)
        let operatorKey = try PrivateKey.generateP256()
        let team = String(SyntheticAppAttest.appID.prefix(10))
        let standIn = try await AppleRiskStandIn.start(
            operatorKey: operatorKey.publicKey, keyID: Self.keyID, team: team, authority: authority,
            appID: SyntheticAppAttest.appID)
        let location = DatabaseLocation.sqlite(path: storeDirectory() + "/gateway.sqlite")
        try await GatewayHarness.with(configure: {
            AppAttestRefusalTests.configure(&$0, path: storeDirectory() + "/unused.sqlite", authority: authority)
            $0.database = location
            var risk = AppAttestSettings.RiskCheck(
                keyID: Self.keyID, privateKeyPath: "AuthKey_test.p8", privateKeyPEM: operatorKey.pem)
            risk.url = standIn.url
            risk.maximum = 3
            $0.appAttest?.risk = risk
        }) { harness in
            func device(_ id: String) async throws -> StoredDevice? {
                try await withStore(location) { try await $0.devices() }.first { $0.id == id }
            }
            // Within the maximum: the metric and Apple's new receipt are kept, the device serves.
            let first = try SyntheticAppAttest.Device()
            standIn.answer(.receipt(metric: 2, devicePublicKey: first.key.publicKey))
            let firstID = try await AppAttestRefusalTests.enrol(harness, authority, first)
            await eventually("the first device's risk metric is 2") { (try? await device(firstID))??.riskMetric == 2 }
            let kept = try #require(try await device(firstID))
            #expect(kept.revokedAtMilliseconds == nil)
            #expect(
                String(decoding: standIn.bodies.first ?? [], as: UTF8.self)
                    == Base64URL.encodeStandard(Array("synthetic receipt".utf8)))
            #expect(
                try AppAttestReceipt.parse(
                    content: CMSSignedData.verifiedContent(
                        kept.receipt, roots: [authority.root.certificate], at: Int64(Instant.now.secondsSinceEpoch))
                ).riskMetric == 2)

            // Over it: revoked, so its sessions end and its key opens none.
            let second = try SyntheticAppAttest.Device()
            standIn.answer(.receipt(metric: 7, devicePublicKey: second.key.publicKey))
            let secondID = try await AppAttestRefusalTests.enrol(harness, authority, second)
            await eventually("the second device is revoked") {
                (try? await device(secondID))??.revokedAtMilliseconds != nil
            }
            #expect((try await device(secondID))?.riskMetric == 7)
            await AppAttestEndToEndTests.logged(harness, "app_attest_risk_over_limit device_id=\(secondID)")

            // A receipt for another key than the device's is not believed: nothing kept.
            let third = try SyntheticAppAttest.Device()
            standIn.answer(.receipt(metric: 1, devicePublicKey: try PrivateKey.generateP256().publicKey))
            standIn.answer(.status(304))
            let thirdID = try await AppAttestRefusalTests.enrol(harness, authority, third)
            await AppAttestEndToEndTests.logged(harness, "app_attest_risk_failed device_id=\(thirdID)")
            let metrics = try await JWKSSourceTests.metrics(harness)
            #expect(metrics.contains(#"textgateway_app_attest_risk_checks_total{result="ok"} 1"#))
            #expect(metrics.contains(#"textgateway_app_attest_risk_checks_total{result="over_limit"} 1"#))
            await eventually("a not_modified risk check is counted") {
                (try? await JWKSSourceTests.metrics(harness))?.contains(
                    #"textgateway_app_attest_risk_checks_total{result="not_modified"} 1"#) == true
            }
            #expect((try await device(thirdID))?.riskMetric == nil)
            #expect(standIn.refusedTokens == 0)
        }
        await standIn.stop()
    }

    @Test("the authorization token is ES256 by the operator's key with its id and the team; another key's is refused")
    func authorizationToken() throws {
        let key = try PrivateKey.generateP256()
        let checker = AppAttestRiskChecker(
            settings: AppAttestSettings.RiskCheck(keyID: Self.keyID, privateKeyPath: "k.p8", privateKeyPEM: key.pem),
            key: key, repository: CountingDevices(), extraRoot: nil,
            registry: MetricsRegistry(), logger: Logger(level: .info, sink: LogSink.memory()), clock: { .now })
        let token = try checker.authorization(team: "ABCDE12345")
        #expect(AppleRiskStandIn.isValid(token: token, key: key.publicKey, keyID: Self.keyID, team: "ABCDE12345"))
        #expect(
            !AppleRiskStandIn.isValid(
                token: token, key: try PrivateKey.generateP256().publicKey, keyID: Self.keyID, team: "ABCDE12345"))
        #expect(!AppleRiskStandIn.isValid(token: token, key: key.publicKey, keyID: Self.keyID, team: "OTHERTEAM1"))
        // The .p8 file's PEM reads back as the same key.
        #expect(try PrivateKey(pem: key.pem).publicKey.derSubjectPublicKeyInfo == key.publicKey.derSubjectPublicKeyInfo)
    }

    @Test("a real iPhone's receipt verifies under Apple Root CA - G3 and names its App ID and key")
    func realReceipt() throws {
        let fixture = try AppAttestFixture.load()
        let verifier = AppAttestVerifier(
            appIDs: [AppAttestFixture.appID], environments: .development,
            trust: try AppAttestVerifier.trustStore(extraRootPEM: nil))
        let verified = try verifier.verifyAttestation(
            keyID: fixture.keyID, attestation: fixture.attestation, clientData: Array("wurzelpfropf".utf8),
            at: 1_611_404_013)
        let apple = try X509Certificate(pem: AppAttestReceipt.appleRootG3PEM)
        #expect(SHA256.hexDigest(apple.der) == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        let receipt = try AppAttestReceipt.verified(
            verified.receipt, roots: [apple], at: 1_611_404_013, appID: AppAttestFixture.appID,
            point: verified.publicKey)
        #expect(receipt.type == "ATTEST" && receipt.riskMetric == nil)
        // Another root, another App ID, another key: refused.
        let other = try CertificateIssuer.selfSigned(
            CertificateFields(
                commonName: "Other", serialNumber: 1, notBefore: 0, notAfter: 4_000_000_000,
                isCertificateAuthority: true, keyUsage: [.keyCertSign]),
            key: PrivateKey.generateP256())
        #expect(throws: AppAttestReceipt.Failure.self) {
            try AppAttestReceipt.verified(
                verified.receipt, roots: [other.certificate], at: 1_611_404_013, appID: AppAttestFixture.appID,
                point: verified.publicKey)
        }
        #expect(throws: AppAttestReceipt.Failure.self) {
            try AppAttestReceipt.verified(
                verified.receipt, roots: [apple], at: 1_611_404_013, appID: "ABCDE12345.other",
                point: verified.publicKey)
        }
        #expect(throws: AppAttestReceipt.Failure.self) {
            try AppAttestReceipt.verified(
                verified.receipt, roots: [apple], at: 1_611_404_013, appID: AppAttestFixture.appID,
                point: [0x04] + [UInt8](repeating: 1, count: 64))
        }
        // After its signing certificate expired (2021-06-18): refused.
        #expect(throws: AppAttestReceipt.Failure.self) {
            try AppAttestReceipt.verified(
                verified.receipt, roots: [apple], at: 1_700_000_000, appID: AppAttestFixture.appID,
                point: verified.publicKey)
        }
    }
}
