import Access
package import Crypto

/// An App Attest "device" under a test root: what a real iPhone and Apple's CA make, built
/// here so that every refusal can be shown (a wrong app, environment, nonce, counter, chain,
/// key, signature) with one thing changed at a time.
package struct SyntheticAppAttest: Sendable {
    /// The test root, trusted beside Apple's by `APP_ATTEST_EXTRA_ROOT_CA_FILE` (or directly).
    package let root: CertificateIssuer
    package let intermediate: CertificateIssuer
    package static let appID = "ABCDE12345.example.synthetic"

    /// A root and an intermediate valid from `notBefore` for a year.
    package init(notBefore: Int64, name: String = "Synthetic App Attestation Root") throws {
        let rootKey = try PrivateKey.generateP256()
        let year: Int64 = 365 * 86_400
        root = try CertificateIssuer.selfSigned(
            CertificateFields(
                commonName: name, serialNumber: 1, notBefore: notBefore - 60, notAfter: notBefore + year,
                isCertificateAuthority: true, keyUsage: [.keyCertSign, .cRLSign]),
            key: rootKey
        )
        let intermediateKey = try PrivateKey.generateP256()
        let certificate = try root.issue(
            CertificateFields(
                commonName: name + " CA 1", serialNumber: 2, notBefore: notBefore - 60, notAfter: notBefore + year,
                isCertificateAuthority: true, keyUsage: [.keyCertSign, .cRLSign]),
            for: intermediateKey.publicKey
        )
        intermediate = CertificateIssuer(certificate: certificate, key: intermediateKey)
    }

    /// One device: its key, and what it sends.
    package struct Device: Sendable {
        package let key: PrivateKey
        package let point: [UInt8]
        package var keyID: [UInt8] { SHA256.hash(point) }

        package init() throws {
            key = try PrivateKey.generateP256()
            guard let point = try Self.point(of: key) else { throw SyntheticError() }
            self.point = point
        }

        private static func point(of key: PrivateKey) throws -> [UInt8]? {
            let components = key.publicKey.components
            guard case .p256(let x, let y) = components else { return nil }
            return [0x04] + x + y
        }
    }

    /// What to change in an attestation.
    package struct Changes: Sendable {
        package var appID = SyntheticAppAttest.appID
        package var aaguid = AppAttestVerifier.developmentAAGUID
        package var counter: UInt32 = 0
        /// Client data the nonce is made over instead of the challenge's.
        package var nonceOver: [UInt8]?
        package var credentialID: [UInt8]?
        package var leafNotBefore: Int64?
        package var leafNotAfter: Int64?
        package var fmt = "apple-appattest"
        /// Extension data after the credential (flag ED), as newer iOS versions append.
        package var extensionData = false
        /// Another issuer for the leaf (a chain to another root).
        package var issuer: CertificateIssuer?
        /// A key for the leaf other than the device's.
        package var leafKey: PublicKey?

        package init() {}
    }

    /// The attestation object of `device` over `challenge` (its UTF-8 bytes, as an app's client data) at `now`.
    package func attestation(_ device: Device, challenge: String, now: Int64, changes: Changes = Changes()) throws
        -> [UInt8]
    {
        try attestation(
            device, clientDataHash: SHA256.hash(changes.nonceOver ?? Array(challenge.utf8)), now: now, changes: changes)
    }

    /// The attestation object of `device` over the client data whose SHA-256 is `clientDataHash`,
    /// as `DCAppAttestService.attestKey` makes it.
    package func attestation(_ device: Device, clientDataHash: [UInt8], now: Int64, changes: Changes = Changes()) throws
        -> [UInt8]
    {
        var authData = SHA256.hash(Array(changes.appID.utf8))
        authData.append(0x41 | (changes.extensionData ? 0x80 : 0))
        authData += bigEndian(changes.counter)
        authData += changes.aaguid
        let credential = changes.credentialID ?? device.keyID
        authData += [UInt8(credential.count >> 8), UInt8(credential.count & 0xFF)] + credential
        authData += CBORWriter.encode(
            .map([
                (.unsigned(1), .unsigned(2)), (.unsigned(3), .negative(6)), (.negative(0), .unsigned(1)),
                (.negative(1), .bytes(Array(device.point[1..<33]))), (.negative(2), .bytes(Array(device.point[33...]))),
            ]))
        if changes.extensionData { authData += CBORWriter.encode(.map([(.text("credProtect"), .unsigned(2))])) }
        let nonce = SHA256.hash(authData + clientDataHash)
        // SEQUENCE { [1] EXPLICIT OCTET STRING nonce }
        let nonceExtension: [UInt8] = [0x30, 0x24, 0xA1, 0x22, 0x04, 0x20] + nonce
        let issuer = changes.issuer ?? intermediate
        let leaf = try issuer.issue(
            CertificateFields(
                commonName: SHA256.hexString(device.keyID), serialNumber: UInt64.random(in: 10...UInt64.max),
                notBefore: changes.leafNotBefore ?? now - 60, notAfter: changes.leafNotAfter ?? now + 3 * 86_400,
                isCertificateAuthority: false, keyUsage: [.digitalSignature],
                extensions: [CertificateExtension(oid: AppAttestVerifier.nonceExtension, value: nonceExtension)]),
            for: changes.leafKey ?? device.key.publicKey
        )
        return CBORWriter.encode(
            .map([
                (.text("fmt"), .text(changes.fmt)),
                (
                    .text("attStmt"),
                    .map([
                        (.text("x5c"), .array([.bytes(leaf.der), .bytes(issuer.certificate.der)])),
                        (.text("receipt"), .bytes(Array("synthetic receipt".utf8))),
                    ])
                ),
                (.text("authData"), .bytes(authData)),
            ]))
    }

    /// An assertion by `signer` (the device's key unless given) over `challenge` with `counter`.
    package func assertion(
        _ device: Device, challenge: String, counter: UInt32, appID: String = SyntheticAppAttest.appID,
        signedOver: [UInt8]? = nil, signer: PrivateKey? = nil
    ) throws -> [UInt8] {
        try assertion(
            device, clientDataHash: SHA256.hash(signedOver ?? Array(challenge.utf8)), counter: counter, appID: appID,
            signer: signer)
    }

    /// An assertion over the client data whose SHA-256 is `clientDataHash`, as
    /// `DCAppAttestService.generateAssertion` makes it.
    package func assertion(
        _ device: Device, clientDataHash: [UInt8], counter: UInt32, appID: String = SyntheticAppAttest.appID,
        signer: PrivateKey? = nil
    ) throws -> [UInt8] {
        let authenticatorData = SHA256.hash(Array(appID.utf8)) + [0x01] + bigEndian(counter)
        let nonce = SHA256.hash(authenticatorData + clientDataHash)
        let signature = try (signer ?? device.key).signature(for: nonce, algorithm: .ecdsaP256SHA256DER)
        return CBORWriter.encode(
            .map([(.text("signature"), .bytes(signature)), (.text("authenticatorData"), .bytes(authenticatorData))]))
    }

    private func bigEndian(_ value: UInt32) -> [UInt8] {
        [UInt8(value >> 24), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }
}

/// Just enough CBOR writing for the synthetic attestations (definite lengths, shortest form).
package enum CBORWriter {
    package indirect enum Item: Sendable {
        case unsigned(UInt64)
        /// -1 - n.
        case negative(UInt64)
        case bytes([UInt8])
        case text(String)
        case array([Item])
        case map([(Item, Item)])
    }

    package static func encode(_ item: Item) -> [UInt8] {
        switch item {
        case .unsigned(let value): return head(0, value)
        case .negative(let value): return head(1, value)
        case .bytes(let bytes): return head(2, UInt64(bytes.count)) + bytes
        case .text(let text): return head(3, UInt64(text.utf8.count)) + Array(text.utf8)
        case .array(let items): return head(4, UInt64(items.count)) + items.flatMap(encode)
        case .map(let pairs): return head(5, UInt64(pairs.count)) + pairs.flatMap { encode($0.0) + encode($0.1) }
        }
    }

    static func head(_ major: UInt8, _ value: UInt64) -> [UInt8] {
        let type = major << 5
        switch value {
        case 0..<24: return [type | UInt8(value)]
        case 24..<256: return [type | 24, UInt8(value)]
        case 256..<65_536: return [type | 25, UInt8(value >> 8), UInt8(value & 0xFF)]
        case 65_536..<4_294_967_296:
            return [type | 26] + (0..<4).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xFF) }
        default: return [type | 27] + (0..<8).reversed().map { UInt8(value >> (8 * UInt64($0)) & 0xFF) }
        }
    }
}

/// A generated key that is not P-256, which cannot happen.
package struct SyntheticError: Error {}
