import Crypto
import TestSupport
import Testing

@testable import Access

/// The pinned Apple App Attestation Root CA against a real attestation's chain (the
/// certificates kept with the Crypto tests, `Tests/CryptoTests/Fixtures/app-attest`).
@Suite("Apple App Attestation root")
struct AppleAppAttestationRootTests {
    static let fixtures = "Tests/CryptoTests/Fixtures/app-attest/"
    /// When the attestation was made: 2021-01-23T12:13:33Z.
    static let attestedAt: Int64 = 1_611_404_013

    static func chain() throws -> (leaf: X509Certificate, intermediate: X509Certificate) {
        (
            try X509Certificate(pem: RepositoryFile.text(fixtures + "leaf.pem")),
            try X509Certificate(pem: RepositoryFile.text(fixtures + "intermediate.pem"))
        )
    }

    @Test("is the certificate its documentation describes")
    func describesItself() throws {
        let root = try X509Certificate(pem: AppleAppAttestationRoot.pem)
        #expect(SHA256.hexDigest(root.der) == "1cb9823ba28ba6ad2d33a006941de2ae4f513ef1d4e831b9f7e0fa7b6242c932")
        // 2020-03-18T18:32:53Z to 2045-03-15T00:00:00Z.
        #expect(root.notBefore == 1_584_556_373)
        #expect(root.notAfter == 2_373_148_800)
        // basicConstraints: cA true.
        #expect(root.extensionValue(oid: "2.5.29.19") == [0x30, 0x03, 0x01, 0x01, 0xFF])
        // A P-384 key, which signs certificates only: not a key PublicKey verifies with.
        #expect(root.p256PublicPoint == nil)
    }

    @Test("verifies a real device's chain when it was made, and not outside the leaf's validity")
    func verifiesRealChain() throws {
        let (leaf, intermediate) = try Self.chain()
        let store = X509TrustStore(roots: [try X509Certificate(pem: AppleAppAttestationRoot.pem)])
        try store.verify(leaf: leaf, intermediates: [intermediate], at: Self.attestedAt)
        // The leaf was valid from 2021-01-22T12:13:35Z to 2021-01-25T12:13:35Z.
        let expired = try #require(throws: CryptoError.self) {
            try store.verify(leaf: leaf, intermediates: [intermediate], at: leaf.notAfter + 1)
        }
        #expect(expired.reason.contains("certificate has expired"), "\(expired)")
        let early = try #require(throws: CryptoError.self) {
            try store.verify(leaf: leaf, intermediates: [intermediate], at: leaf.notBefore - 1)
        }
        #expect(early.reason.contains("certificate is not yet valid"), "\(early)")
        // Without the intermediate the leaf reaches no root.
        #expect(throws: CryptoError.self) { try store.verify(leaf: leaf, intermediates: [], at: Self.attestedAt) }
    }

    @Test("the real chain does not verify against another root")
    func refusesOtherRoot() throws {
        let (leaf, intermediate) = try Self.chain()
        let fields = CertificateFields(
            commonName: "Apple App Attestation Root CA", serialNumber: 1, notBefore: 1_584_556_373,
            notAfter: 2_373_148_800,
            isCertificateAuthority: true, keyUsage: [.keyCertSign, .cRLSign]
        )
        let other = try CertificateIssuer.selfSigned(fields, key: PrivateKey.generateP256())
        let store = X509TrustStore(roots: [other.certificate])
        #expect(throws: CryptoError.self) {
            try store.verify(leaf: leaf, intermediates: [intermediate], at: Self.attestedAt)
        }
    }
}
