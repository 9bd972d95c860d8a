import Crypto
import Foundation

/// The certificates of a real App Attest attestation, and the assertion the same key made
/// (`Fixtures/app-attest/README.md` says where they come from).
enum AppAttestFixture {
    /// `Fixtures/app-attest` beside this file.
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures/app-attest")

    static func text(_ name: String) throws -> String {
        try String(contentsOf: directory.appendingPathComponent(name), encoding: .utf8)
    }

    /// The device key's certificate (`x5c[0]`).
    static func leaf() throws -> X509Certificate { try X509Certificate(pem: text("leaf.pem")) }
    /// "Apple App Attestation CA 1" (`x5c[1]`).
    static func intermediate() throws -> X509Certificate { try X509Certificate(pem: text("intermediate.pem")) }
    /// The attestation object's `authData`.
    static func authenticatorData() throws -> [UInt8] { TestEncoding.base64(try text("authenticator-data.base64")) }

    /// When the attestation was made: 2021-01-23T12:13:33Z.
    static let attestedAt: Int64 = 1_611_404_013
    /// The leaf's validity: 2021-01-22T12:13:35Z to 2021-01-25T12:13:35Z.
    static let leafNotBefore: Int64 = 1_611_317_615
    static let leafNotAfter: Int64 = 1_611_576_815
    /// The client data the app attested and asserted: "wurzelpfropf".
    static let clientData = TestEncoding.base64("d3VyemVscGZyb3Bm")
    /// The key identifier: SHA-256 of the device key's uncompressed point.
    static let keyId = TestEncoding.base64("YmbJO4x5nEHUvncp9zdWuVZjNBEMgJn3cdSToAXQe3M=")
    /// App Attest's nonce extension in the leaf.
    static let nonceOID = "1.2.840.113635.100.8.2"

    /// The assertion's DER ECDSA signature, over SHA-256(authenticatorData ‖ SHA-256(clientData)).
    static let assertionSignature = TestEncoding.base64(
        "MEQCIEnoFP9BHrz1QrLzhjI3dEPJ1gP0pVDYFNEr7HWLx7OoAiAYzsGxltK4XpOOYrrG04V6TJXKN/xqQa+nmoVEab0tPA==")
    /// The assertion's authenticator data (counter 1).
    static let assertionAuthenticatorData = TestEncoding.base64("RWUS6n4mlHark+G3lxaFWS/3P4lKwOwv1UgIoIv7bI9AAAAAAQ==")
}
