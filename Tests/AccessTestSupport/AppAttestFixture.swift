import Foundation
import JSON
import TestSupport

/// The real iOS 14.4 attestation and assertion in
/// `Tests/GatewayTests/Fixtures/app-attest/ios-14.4.json` (see the README beside it), decoded
/// from base64.
package enum AppAttestFixture {
    /// `6MURL8TA57.de.vincent-haupert.apple-appattest-poc`: team identifier and bundle identifier.
    package static let appID = "6MURL8TA57.de.vincent-haupert.apple-appattest-poc"

    package struct Values {
        /// The CBOR attestation object.
        package let attestation: [UInt8]
        /// The key identifier: SHA-256 of the device key.
        package let keyID: [UInt8]
        /// The device key's SubjectPublicKeyInfo, from its PEM.
        package let publicKeyInfo: [UInt8]
        /// The CBOR assertion object.
        package let assertion: [UInt8]
    }

    package struct Missing: Error, CustomStringConvertible {
        package let description: String
    }

    package static func load() throws -> Values {
        let text = try RepositoryFile.text("Tests/GatewayTests/Fixtures/app-attest/ios-14.4.json")
        let document = try JSONValue.parse(Array(text.utf8))
        func base64(_ object: String, _ member: String) throws -> [UInt8] {
            guard let string = document[object]?[member]?.stringValue, let data = Data(base64Encoded: string) else {
                throw Missing(description: "\(object).\(member) is not base64 in the fixture")
            }
            return Array(data)
        }
        guard let pem = document["attestation"]?["publicKey"]?.stringValue else {
            throw Missing(description: "attestation.publicKey")
        }
        let body = pem.split(separator: "\n").filter { !$0.hasPrefix("-----") }.joined()
        guard let publicKeyInfo = Data(base64Encoded: body) else {
            throw Missing(description: "attestation.publicKey is not PEM")
        }
        return Values(
            attestation: try base64("attestation", "attestationBase64"),
            keyID: try base64("attestation", "keyIdBase64"),
            publicKeyInfo: Array(publicKeyInfo),
            assertion: try base64("assertion", "assertionBase64")
        )
    }
}
