import Crypto
import Testing

/// X.509: reading certificates (a real App Attest leaf and intermediate, and issued ones),
/// verifying chains against a store of roots at a given time, and DER ECDSA signatures.
@Suite("X.509 certificates")
struct X509Tests {
    // MARK: Reading

    @Test("reads the App Attest leaf: validity, P-256 point, key id and nonce extension")
    func readsAppAttestLeaf() throws {
        let leaf = try AppAttestFixture.leaf()
        #expect(leaf.notBefore == AppAttestFixture.leafNotBefore)
        #expect(leaf.notAfter == AppAttestFixture.leafNotAfter)
        let point = try #require(leaf.p256PublicPoint)
        #expect(point.count == 65 && point[0] == 0x04)
        #expect(SHA256.hash(point) == AppAttestFixture.keyId)
        let publicKey = try leaf.publicKey
        #expect(publicKey.kind == .p256)
        #expect(publicKey.derSubjectPublicKeyInfo == (try PublicKey(p256Point: point)).derSubjectPublicKeyInfo)

        // SEQUENCE { [1] EXPLICIT OCTET STRING (32 bytes) }, the nonce being
        // SHA-256(authData ‖ SHA-256(clientData)).
        let nonce = SHA256.hash(try AppAttestFixture.authenticatorData() + SHA256.hash(AppAttestFixture.clientData))
        #expect(leaf.extensionValue(oid: AppAttestFixture.nonceOID) == [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce)
        // basicConstraints, cA false: an empty SEQUENCE.
        #expect(leaf.extensionValue(oid: "2.5.29.19") == [0x30, 0x00])
    }

    @Test("an extension that is absent, or an OID that is not dotted decimal, has no value")
    func absentExtensions() throws {
        let leaf = try AppAttestFixture.leaf()
        // authorityKeyIdentifier: Apple's leaf has none.
        #expect(leaf.extensionValue(oid: "2.5.29.35") == nil)
        #expect(leaf.extensionValue(oid: "1.2.840.113635.100.8.99") == nil)
        for oid in [
            "", "basicConstraints", "2.5.29.19.", "x.y", "1.2.840.113635.100.8.2 ", " 2.5.29.19", "2.5.029.19",
            "2..5.29.19",
        ] {
            #expect(leaf.extensionValue(oid: oid) == nil, "\(oid)")
        }
    }

    @Test("an extension present twice has no value")
    func duplicateExtension() throws {
        let key = try TestKeys.p256()
        let twice = CertificateExtension(oid: "1.3.6.1.4.1.55555.1", value: [0x05, 0x00])
        let fields = CertificateFields(
            commonName: "twice", serialNumber: 1, notBefore: 0, notAfter: 1_000_000, isCertificateAuthority: false,
            keyUsage: [.digitalSignature], extensions: [twice, twice]
        )
        let certificate = try CertificateIssuer.selfSigned(fields, key: key).certificate
        #expect(certificate.extensionValue(oid: twice.oid) == nil)
        var once = fields
        once.extensions = [twice]
        #expect(
            try CertificateIssuer.selfSigned(once, key: key).certificate.extensionValue(oid: twice.oid) == [0x05, 0x00])
    }

    @Test("a P-384 key is not a PublicKey and has no P-256 point")
    func p384Key() throws {
        let intermediate = try AppAttestFixture.intermediate()
        #expect(intermediate.p256PublicPoint == nil)
        #expect(throws: CryptoError.self) { try intermediate.publicKey }
    }

    @Test("reads DER and PEM back to the same bytes, and the first certificate of a PEM text")
    func encodings() throws {
        let leaf = try AppAttestFixture.leaf()
        #expect(try X509Certificate(der: leaf.der).der == leaf.der)
        #expect(try X509Certificate(pem: leaf.pem).der == leaf.der)
        #expect(leaf.pem == (try AppAttestFixture.text("leaf.pem")))
        let intermediate = try AppAttestFixture.intermediate()
        let publicKeyPEM = TestKeys.pem(try TestKeys.p256().publicKey.derSubjectPublicKeyInfo)
        let text = "A chain:\n" + publicKeyPEM + intermediate.pem + leaf.pem
        #expect(try X509Certificate(pem: text).der == intermediate.der)
    }

    @Test("refuses what is not exactly one certificate")
    func refusesOtherBytes() throws {
        let der = try AppAttestFixture.leaf().der
        for bytes in [der + [0], Array(der.dropLast()), [], [0x30, 0x00], TestKeys.flipping(der, at: 1)] {
            #expect(throws: CryptoError.self, "\(bytes.count) bytes") { try X509Certificate(der: bytes) }
        }
        let publicKeyPEM = TestKeys.pem(try TestKeys.p256().publicKey.derSubjectPublicKeyInfo)
        #expect(throws: CryptoError.self) { try X509Certificate(pem: publicKeyPEM) }
        #expect(throws: CryptoError.self) { try X509Certificate(pem: "") }
        let wrapped = "-----BEGIN CERTIFICATE-----\n" + TestEncoding.pemBody(der + [0]) + "-----END CERTIFICATE-----\n"
        #expect(throws: CryptoError.self) { try X509Certificate(pem: wrapped) }
    }

    // MARK: Chains

    @Test("no partial chains: a store holding only the intermediate does not verify the leaf")
    func intermediateIsNoRoot() throws {
        let leaf = try AppAttestFixture.leaf()
        let intermediate = try AppAttestFixture.intermediate()
        let store = X509TrustStore(roots: [intermediate])
        #expect(throws: CryptoError.self) {
            try store.verify(leaf: leaf, intermediates: [], at: AppAttestFixture.attestedAt)
        }
        #expect(throws: CryptoError.self) {
            try X509TrustStore(roots: []).verify(
                leaf: leaf, intermediates: [intermediate], at: AppAttestFixture.attestedAt)
        }
    }

    @Test("an issued chain verifies, and its leaf carries what was asked")
    func issuedChainVerifies() throws {
        let chain = try IssuedChain()
        try chain.store.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: IssuedChain.now)
        // At both ends of the leaf's validity, which lies inside the intermediate's (libcrypto
        // counts a certificate expired from its notAfter on).
        try chain.store.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: chain.leaf.notBefore)
        try chain.store.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: chain.leaf.notAfter - 1)
        #expect(chain.leaf.notBefore == IssuedChain.now - 60)
        #expect(chain.leaf.notAfter == IssuedChain.now + 3600)
        #expect(chain.leaf.extensionValue(oid: AppAttestFixture.nonceOID) == IssuedChain.nonceExtension)
        #expect(chain.leaf.p256PublicPoint == chain.leafKey.publicKey.components.p256Point)
        #expect(chain.intermediate.extensionValue(oid: "2.5.29.19") == [0x30, 0x03, 0x01, 0x01, 0xFF])
        // keyUsage: keyCertSign and cRLSign, bits 5 and 6.
        #expect(chain.intermediate.extensionValue(oid: "2.5.29.15") == [0x03, 0x02, 0x01, 0x06])
        #expect(chain.leaf.extensionValue(oid: "2.5.29.15") == [0x03, 0x02, 0x07, 0x80])
        // Each authority key identifier is its issuer's subject key identifier; a root has none.
        let rootKeyID = try #require(chain.root.certificate.extensionValue(oid: "2.5.29.14"))
        let intermediateKeyID = try #require(chain.intermediate.extensionValue(oid: "2.5.29.14"))
        #expect(rootKeyID.count == 22 && rootKeyID != intermediateKeyID)
        #expect(
            chain.intermediate.extensionValue(oid: "2.5.29.35") == [0x30, 0x16, 0x80, 0x14] + rootKeyID.dropFirst(2))
        #expect(
            chain.leaf.extensionValue(oid: "2.5.29.35") == [0x30, 0x16, 0x80, 0x14] + intermediateKeyID.dropFirst(2))
        #expect(chain.root.certificate.extensionValue(oid: "2.5.29.35") == nil)
    }

    @Test("refuses an extension whose OID is not dotted decimal")
    func refusesLaxOID() throws {
        for oid in ["2.5.29.19.", "1.2.840.113635.100.8.2 ", "basicConstraints", "3.1", "1.02.3", "7"] {
            var fields = IssuedChain.leafFields()
            fields.extensions = [CertificateExtension(oid: oid, value: [0x05, 0x00])]
            #expect(throws: CryptoError.self, "\(oid)") {
                try CertificateIssuer.selfSigned(fields, key: TestKeys.p256())
            }
        }
    }

    @Test("an expired or not yet valid certificate breaks the chain, wherever it is")
    func validityBreaksChain() throws {
        let chain = try IssuedChain()
        let after = try #require(throws: CryptoError.self) {
            try chain.store.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: chain.leaf.notAfter + 1)
        }
        #expect(after.reason.contains("certificate has expired"), "\(after)")
        #expect(after.reason.contains("certificate 0 "), "\(after)")
        let before = try #require(throws: CryptoError.self) {
            try chain.store.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: chain.leaf.notBefore - 1)
        }
        #expect(before.reason.contains("certificate is not yet valid"), "\(before)")

        // An intermediate that has expired while the leaf has not.
        let shortLived = try chain.root.issue(
            IssuedChain.intermediateFields(notBefore: IssuedChain.now - 7200, notAfter: IssuedChain.now - 1),
            for: chain.intermediateKey.publicKey
        )
        let expired = try #require(throws: CryptoError.self) {
            try chain.store.verify(leaf: chain.leaf, intermediates: [shortLived], at: IssuedChain.now)
        }
        #expect(
            expired.reason.contains("certificate has expired") && expired.reason.contains("certificate 1 "),
            "\(expired)")
    }

    @Test("a leaf signed by another key in the intermediate's name does not verify")
    func forgedSignature() throws {
        let chain = try IssuedChain()
        let impostor = CertificateIssuer(certificate: chain.intermediate, key: try PrivateKey.generateP256())
        let forged = try impostor.issue(IssuedChain.leafFields(), for: chain.leafKey.publicKey)
        let error = try #require(throws: CryptoError.self) {
            try chain.store.verify(leaf: forged, intermediates: [chain.intermediate], at: IssuedChain.now)
        }
        #expect(error.reason.contains("signature failure"), "\(error)")
    }

    @Test("a chain to another root, or missing its intermediate, does not verify")
    func otherRoot() throws {
        let chain = try IssuedChain()
        let other = try IssuedChain()
        #expect(throws: CryptoError.self) {
            try other.store.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: IssuedChain.now)
        }
        #expect(throws: CryptoError.self) {
            try other.store.verify(
                leaf: chain.leaf, intermediates: [chain.intermediate, other.intermediate], at: IssuedChain.now)
        }
        let missing = try #require(throws: CryptoError.self) {
            try chain.store.verify(leaf: chain.leaf, intermediates: [], at: IssuedChain.now)
        }
        #expect(missing.reason.contains("unable to get local issuer certificate"), "\(missing)")
        // The reason names checks, never what a certificate holds.
        #expect(!missing.reason.contains("Test"), "\(missing)")
        // Both roots in one store, of one name: each chain verifies, the authority key
        // identifier telling which root issued it.
        let both = X509TrustStore(roots: [chain.root.certificate, other.root.certificate])
        try both.verify(leaf: chain.leaf, intermediates: [chain.intermediate], at: IssuedChain.now)
        try both.verify(leaf: other.leaf, intermediates: [other.intermediate], at: IssuedChain.now)
    }

    @Test("an intermediate that is not a certificate authority does not verify")
    func intermediateMustBeCA() throws {
        let chain = try IssuedChain()
        var fields = IssuedChain.intermediateFields()
        fields.isCertificateAuthority = false
        let notCA = CertificateIssuer(
            certificate: try chain.root.issue(fields, for: chain.intermediateKey.publicKey), key: chain.intermediateKey)
        let leaf = try notCA.issue(IssuedChain.leafFields(), for: chain.leafKey.publicKey)
        let error = try #require(throws: CryptoError.self) {
            try chain.store.verify(leaf: leaf, intermediates: [notCA.certificate], at: IssuedChain.now)
        }
        #expect(error.reason.contains("invalid CA certificate"), "\(error)")
    }

    @Test("a leaf with a critical extension libcrypto does not know does not verify")
    func unknownCriticalExtension() throws {
        let chain = try IssuedChain()
        var fields = IssuedChain.leafFields()
        fields.extensions = [
            CertificateExtension(oid: AppAttestFixture.nonceOID, value: IssuedChain.nonceExtension, isCritical: true)
        ]
        let leaf = try chain.intermediateIssuer.issue(fields, for: chain.leafKey.publicKey)
        #expect(throws: CryptoError.self) {
            try chain.store.verify(leaf: leaf, intermediates: [chain.intermediate], at: IssuedChain.now)
        }
    }

    @Test("verifies from many tasks at once against one store")
    func verifiesConcurrently() async throws {
        let chain = try IssuedChain()
        let (store, leaf, intermediate) = (chain.store, chain.leaf, chain.intermediate)
        let results = await withTaskGroup(of: (valid: Int, refused: Int).self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var counts = (valid: 0, refused: 0)
                    for round in 0..<20 {
                        // Alternately inside and after the leaf's validity: one store, two outcomes.
                        let at = round.isMultiple(of: 2) ? IssuedChain.now : leaf.notAfter + 1
                        do {
                            try store.verify(leaf: leaf, intermediates: [intermediate], at: at)
                            counts.valid += 1
                        } catch {
                            counts.refused += 1
                        }
                    }
                    return counts
                }
            }
            return await group.reduce(into: (valid: 0, refused: 0)) {
                $0.valid += $1.valid
                $0.refused += $1.refused
            }
        }
        #expect(results.valid == 80 && results.refused == 80)
    }

    // MARK: DER ECDSA

    @Test("DER ECDSA: a signature verifies, over that message only")
    func derSignatureRoundTrip() throws {
        let key = try TestKeys.p256()
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256DER)
        #expect(signature.first == 0x30 && (8...72).contains(signature.count))
        #expect(key.publicKey.isValidSignature(signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256DER))
        #expect(
            !key.publicKey.isValidSignature(
                signature, for: TestKeys.flipping(TestKeys.message, at: 0), algorithm: .ecdsaP256SHA256DER))
        #expect(
            !key.publicKey.isValidSignature(signature, for: TestKeys.message.dropLast(), algorithm: .ecdsaP256SHA256DER)
        )
        #expect(
            !(try TestKeys.rsa()).publicKey.isValidSignature(
                signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256DER))
        #expect(
            !(try PrivateKey.generateP256()).publicKey.isValidSignature(
                signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256DER))
        // The same signature in JWS's form is the other algorithm's, and not this one's.
        let raw = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256)
        #expect(
            key.publicKey.isValidSignature(
                TestKeys.der(ofRaw: raw), for: TestKeys.message, algorithm: .ecdsaP256SHA256DER))
        #expect(!key.publicKey.isValidSignature(raw, for: TestKeys.message, algorithm: .ecdsaP256SHA256DER))
        #expect(!key.publicKey.isValidSignature(signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256))
    }

    @Test("DER ECDSA: refuses bytes after the signature, tampering and other shapes")
    func derSignatureShapes() throws {
        let key = try TestKeys.p256()
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256DER)
        for shape in [
            signature + [0], Array(signature.dropLast()), [], [0x30, 0x00],
            TestKeys.flipping(signature, at: signature.count - 1),
        ] {
            #expect(
                !key.publicKey.isValidSignature(shape, for: TestKeys.message, algorithm: .ecdsaP256SHA256DER),
                "\(shape)")
        }
        #expect(throws: CryptoError.self) {
            try TestKeys.rsa().signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256DER)
        }
    }

    @Test("DER ECDSA: the real App Attest assertion verifies with the leaf's key")
    func realAssertion() throws {
        let publicKey = try AppAttestFixture.leaf().publicKey
        // The signed message is the nonce; the verification hashes it once more.
        let nonce = SHA256.hash(AppAttestFixture.assertionAuthenticatorData + SHA256.hash(AppAttestFixture.clientData))
        #expect(
            publicKey.isValidSignature(AppAttestFixture.assertionSignature, for: nonce, algorithm: .ecdsaP256SHA256DER))
        #expect(
            !publicKey.isValidSignature(
                AppAttestFixture.assertionSignature, for: SHA256.hash(nonce), algorithm: .ecdsaP256SHA256DER))
        #expect(
            !publicKey.isValidSignature(
                AppAttestFixture.assertionSignature, for: TestKeys.flipping(nonce, at: 31),
                algorithm: .ecdsaP256SHA256DER))
    }

    @Test("a P-256 key from its 65-byte point, and refusals of other points")
    func p256Point() throws {
        let key = try TestKeys.p256()
        let point = try #require(key.publicKey.components.p256Point)
        let rebuilt = try PublicKey(p256Point: point)
        #expect(rebuilt.derSubjectPublicKeyInfo == key.publicKey.derSubjectPublicKeyInfo)
        let signature = try key.signature(for: TestKeys.message, algorithm: .ecdsaP256SHA256DER)
        #expect(rebuilt.isValidSignature(signature, for: TestKeys.message, algorithm: .ecdsaP256SHA256DER))
        var compressed = Array(point.prefix(33))
        compressed[0] = 0x02 | (point[64] & 1)
        for bad in [
            Array(point.dropFirst()), point + [0], compressed, [0x05] + point.dropFirst(),
            TestKeys.flipping(point, at: 64),
        ] {
            #expect(throws: CryptoError.self, "\(bad.count) bytes") { try PublicKey(p256Point: bad) }
        }
    }
}

extension PublicKeyComponents {
    /// A P-256 key's point as 0x04 ‖ x ‖ y; nil for RSA.
    var p256Point: [UInt8]? {
        if case .p256(let x, let y) = self { return [0x04] + x + y }
        return nil
    }
}

/// root → intermediate → leaf, made with ``CertificateIssuer`` as App Attest's chains are
/// shaped: P-256 keys, a CA intermediate, a leaf carrying the nonce extension.
struct IssuedChain {
    /// The time the chains are checked at: 2024-01-01T00:00:00Z.
    static let now: Int64 = 1_704_067_200
    /// SEQUENCE { [1] EXPLICIT OCTET STRING of 32 bytes }, as App Attest's nonce extension.
    static let nonceExtension: [UInt8] = [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + SHA256.hash("nonce".utf8)

    let root: CertificateIssuer
    let intermediateKey: PrivateKey
    let intermediateIssuer: CertificateIssuer
    let leafKey: PrivateKey
    let leaf: X509Certificate
    let store: X509TrustStore
    var intermediate: X509Certificate { intermediateIssuer.certificate }

    init() throws {
        let rootFields = CertificateFields(
            commonName: "Test Root", serialNumber: 1, notBefore: Self.now - 86_400 * 365,
            notAfter: Self.now + 86_400 * 365 * 20,
            isCertificateAuthority: true, keyUsage: [.keyCertSign, .cRLSign]
        )
        root = try CertificateIssuer.selfSigned(rootFields, key: PrivateKey.generateP256())
        intermediateKey = try PrivateKey.generateP256()
        intermediateIssuer = CertificateIssuer(
            certificate: try root.issue(Self.intermediateFields(), for: intermediateKey.publicKey), key: intermediateKey
        )
        leafKey = try PrivateKey.generateP256()
        leaf = try intermediateIssuer.issue(Self.leafFields(), for: leafKey.publicKey)
        store = X509TrustStore(roots: [root.certificate])
    }

    static func intermediateFields(notBefore: Int64 = now - 86_400 * 30, notAfter: Int64 = now + 86_400 * 365)
        -> CertificateFields
    {
        CertificateFields(
            commonName: "Test Intermediate", serialNumber: 2, notBefore: notBefore, notAfter: notAfter,
            isCertificateAuthority: true, keyUsage: [.keyCertSign, .cRLSign]
        )
    }

    static func leafFields() -> CertificateFields {
        CertificateFields(
            commonName: "Test Device", serialNumber: 0x0177_2F29_F748, notBefore: now - 60, notAfter: now + 3600,
            isCertificateAuthority: false, keyUsage: [.digitalSignature],
            extensions: [CertificateExtension(oid: AppAttestFixture.nonceOID, value: nonceExtension)]
        )
    }
}
