package import Access
import Foundation
import JSON
import TestSupport

/// One real chain of `Tests/GatewayTests/Fixtures/android-key-attestation/chains/` (see the README
/// beside them).
package struct AndroidChainFixture: Sendable, CustomStringConvertible {
    package let name: String
    /// DER, leaf first, as the phone sent it.
    package let chain: [[UInt8]]
    /// What the app passed to `setAttestationChallenge`.
    package let challenge: [UInt8]
    /// An instant at which the chain's intermediates are valid, in Unix seconds.
    package let verifyAt: Int64
    /// The chain's own packages and signing digests: the reference policy allows them.
    package let packages: [String]
    package let digests: [[UInt8]]
    /// `accept` or `reject` under the reference policy.
    package let verdict: String
    package let provisioning: String
    /// `serialHex` of each certificate, leaf first.
    package let serials: [String]

    package var description: String { name }

    package static let directory = "Tests/GatewayTests/Fixtures/android-key-attestation/chains"

    package static let names = [
        "emulator-a11-software-rsa", "pixel3-a9-tee-ec-factory-unlocked", "pixel3-a9-tee-rsa-factory-device-ids",
        "pixel6-a13-tee-ec-rkp", "pixel8a-a14-tee-ec-rkp-unlocked", "pixel8a-a14-tee-rsa-rkp-unlocked",
        "pixel8a-a15-tee-ec-rkp-webauthn", "pixel9pro-a16-tee-ec-rkp", "pixelxl-a10-software-ec",
        "unknown-2018-tee-rsa-factory-shareduid",
    ]

    /// The reason each real chain is refused under the reference policy, and with the boot rule relaxed.
    package static let refusals:
        [String: (reference: AndroidAttestationFailure.Reason, relaxed: AndroidAttestationFailure.Reason?)] = [
            "emulator-a11-software-rsa": (.root, .root),
            "pixel3-a9-tee-ec-factory-unlocked": (.boot, nil),
            "pixel3-a9-tee-rsa-factory-device-ids": (.app, .app),
            "pixel8a-a14-tee-ec-rkp-unlocked": (.boot, nil),
            "pixel8a-a14-tee-rsa-rkp-unlocked": (.boot, nil),
            "pixelxl-a10-software-ec": (.root, .root),
            "unknown-2018-tee-rsa-factory-shareduid": (.boot, nil),
        ]

    package struct Missing: Error, CustomStringConvertible {
        package let description: String
    }

    package static func load(_ name: String) throws -> AndroidChainFixture {
        let text = try RepositoryFile.text("\(directory)/\(name).json")
        let document = try JSONValue.parse(Array(text.utf8))
        guard case .array(let pems)? = document["chainPem"] else { throw Missing(description: "\(name): chainPem") }
        let chain = try pems.map { pem -> [UInt8] in
            guard let text = pem.stringValue else { throw Missing(description: "\(name): a PEM is not a string") }
            let body = text.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
            guard let der = Data(base64Encoded: body) else {
                throw Missing(description: "\(name): a PEM is not base64")
            }
            return Array(der)
        }
        guard let challengeText = document["challengeBase64"]?.stringValue,
            let challenge = Data(base64Encoded: challengeText)
        else { throw Missing(description: "\(name): challengeBase64") }
        guard let instant = document["verifyAt"]?.stringValue, let verifyAt = ISO8601DateFormatter().date(from: instant)
        else { throw Missing(description: "\(name): verifyAt") }
        let application = document["keyDescription"]?["attestationApplicationId"]
        var packages: [String] = []
        if case .array(let listed)? = application?["packages"] {
            packages = listed.compactMap { $0["name"]?.stringValue }
        }
        var digests: [[UInt8]] = []
        if case .array(let listed)? = application?["signingCertSha256Hex"] {
            digests = listed.compactMap { $0.stringValue.flatMap(hexBytes) }
        }
        var serials: [String] = []
        if case .array(let certificates)? = document["certificates"] {
            serials = certificates.compactMap { $0["serialHex"]?.stringValue }
        }
        guard let verdict = document["expectedWithReferencePolicy"]?["verdict"]?.stringValue,
            let provisioning = document["provisioning"]?.stringValue
        else { throw Missing(description: "\(name): expectedWithReferencePolicy.verdict") }
        return AndroidChainFixture(
            name: name, chain: chain, challenge: Array(challenge), verifyAt: Int64(verifyAt.timeIntervalSince1970),
            packages: packages, digests: digests, verdict: verdict, provisioning: provisioning, serials: serials)
    }

    package static func all() throws -> [AndroidChainFixture] { try names.map(load) }

    /// The reference policy: this chain's own packages and digests allowed.
    package var referencePolicy: AndroidAttestationPolicy {
        AndroidAttestationPolicy(apps: Dictionary(packages.map { ($0, digests) }, uniquingKeysWith: { a, _ in a }))
    }

    package static func hexBytes(_ text: String) -> [UInt8]? {
        let characters = Array(text.utf8)
        guard characters.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: characters.count, by: 2) {
            guard let byte = UInt8(String(decoding: characters[index..<index + 2], as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(byte)
        }
        return bytes
    }
}
