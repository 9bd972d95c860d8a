import Access
import Crypto
import JSON

#if canImport(Glibc)
    import Glibc
#endif

/// `bench-crypto attest`: what verifying one App Attest registration and one session costs,
/// with a real iPhone's attestation and assertion (Tests/GatewayTests/Fixtures/app-attest),
/// the verification clock at the moment the device made them.
enum AttestBench {
    static let fixture = "Tests/GatewayTests/Fixtures/app-attest/ios-14.4.json"
    static let appID = "6MURL8TA57.de.vincent-haupert.apple-appattest-poc"
    static let clientData = Array("wurzelpfropf".utf8)
    static let attestedAt: Int64 = 1_611_404_013

    @MainActor
    static func run() throws {
        guard let text = readFile(fixture), let json = try? JSONValue.parse(Array(text.utf8)),
            let keyID = json["attestation"]?["keyIdBase64"]?.stringValue.flatMap({ Base64URL.decodeStandard($0.utf8) }),
            let attestation = json["attestation"]?["attestationBase64"]?.stringValue.flatMap({
                Base64URL.decodeStandard($0.utf8)
            }),
            let assertion = json["assertion"]?["assertionBase64"]?.stringValue.flatMap({
                Base64URL.decodeStandard($0.utf8)
            })
        else { fatalError("cannot read \(fixture) (run from the repository's root)") }
        let verifier = AppAttestVerifier(
            appIDs: [appID], environments: .development, trust: try AppAttestVerifier.trustStore(extraRootPEM: nil))
        let verified = try verifier.verifyAttestation(
            keyID: keyID, attestation: attestation, clientData: clientData, at: attestedAt)
        _ = try verifier.verifyAssertion(
            assertion, clientData: clientData, publicKey: verified.publicKey, appID: appID, counter: 0)
        let registration = nanosecondsPerOperation(batch: 1) {
            (try? verifier.verifyAttestation(
                keyID: keyID, attestation: attestation, clientData: clientData, at: attestedAt)) == nil ? 0 : 1
        }
        let session = nanosecondsPerOperation(batch: 1) {
            (try? verifier.verifyAssertion(
                assertion, clientData: clientData, publicKey: verified.publicKey, appID: appID, counter: 0)) == nil
                ? 0 : 1
        }
        print("| App Attest (a real iPhone's, iOS 14.4) | bytes | verified µs |")
        print("|---|---:|---:|")
        print(
            "| registration: CBOR, chain to Apple's root (P-384, P-256), nonce, key id, authData | "
                + "\(attestation.count) | \(JWTBench.microseconds(registration)) |"
        )
        print(
            "| session: CBOR, authenticatorData, ECDSA P-256 signature | "
                + "\(assertion.count) | \(JWTBench.microseconds(session)) |"
        )
        try runAndroid()
    }

    /// A real Pixel 9 Pro's chain (Tests/GatewayTests/Fixtures/android-key-attestation), at
    /// its `verifyAt`, with its own package and digest allowed; a session signed by a P-256 key.
    static let androidFixture =
        "Tests/GatewayTests/Fixtures/android-key-attestation/chains/pixel9pro-a16-tee-ec-rkp.json"

    @MainActor
    static func runAndroid() throws {
        guard let text = readFile(androidFixture), let json = try? JSONValue.parse(Array(text.utf8)),
            case .array(let pems)? = json["chainPem"],
            let challenge = json["challengeBase64"]?.stringValue.flatMap({ Base64URL.decodeStandard($0.utf8) }),
            let application = json["keyDescription"]?["attestationApplicationId"],
            case .array(let packages)? = application["packages"], let package = packages.first?["name"]?.stringValue,
            case .array(let digests)? = application["signingCertSha256Hex"],
            let digestHex = digests.first?.stringValue, let digest = AndroidAttestSettings.digest(digestHex)
        else { fatalError("cannot read \(androidFixture) (run from the repository's root)") }
        let chain = try pems.map { try X509Certificate(pem: $0.stringValue ?? "").der }
        // 2025-09-26T15:31:20Z, the fixture's verifyAt.
        let verifyAt: Int64 = 1_758_900_680
        let verifier = AndroidAttestationVerifier(policy: AndroidAttestationPolicy(apps: [package: [digest]]))
        _ = try verifier.verify(chain: chain, challenge: challenge, at: verifyAt, revocations: .empty)
        let registration = nanosecondsPerOperation(batch: 1) {
            (try? verifier.verify(chain: chain, challenge: challenge, at: verifyAt, revocations: .empty)) == nil ? 0 : 1
        }
        let key = try PrivateKey.generateP256()
        let sessionChallenge = Base64URL.encode(SecureRandom.bytes(32))
        let signature = try key.signature(
            for: AndroidAttestationVerifier.sessionMessage(challenge: sessionChallenge), algorithm: .ecdsaP256SHA256DER)
        let spki = key.publicKey.derSubjectPublicKeyInfo
        precondition(
            AndroidAttestationVerifier.isValidSession(
                signature: signature, challenge: sessionChallenge, subjectPublicKeyInfo: spki))
        let session = nanosecondsPerOperation(batch: 1) {
            AndroidAttestationVerifier.isValidSession(
                signature: signature, challenge: sessionChallenge, subjectPublicKeyInfo: spki) ? 1 : 0
        }
        print()
        print("| Android Key Attestation (a real Pixel 9 Pro's, Android 16) | bytes | verified µs |")
        print("|---|---:|---:|")
        print(
            "| registration: 5 certificates walked to Google's RSA root (RSA-4096, P-384, P-256), dates, "
                + "revocation, KeyDescription | \(chain.reduce(0) { $0 + $1.count }) | "
                + "\(JWTBench.microseconds(registration)) |")
        print(
            "| session: SubjectPublicKeyInfo read, ECDSA P-256 signature | \(signature.count) | "
                + "\(JWTBench.microseconds(session)) |")
    }

    private static func readFile(_ path: String) -> String? {
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = fread(&buffer, 1, buffer.count, file)
            if count <= 0 { break }
            bytes += buffer[0..<count]
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
