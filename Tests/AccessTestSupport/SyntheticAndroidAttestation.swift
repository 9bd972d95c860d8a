package import Crypto

/// An Android phone's Key Attestation under a test root: the shape of a remotely provisioned
/// chain (root → "Droid CA2" → "Droid CA3" → attestation key → leaf) with a KeyDescription
/// extension written here, so that every refusal can be shown with one thing changed at a time.
package struct SyntheticAndroidAttestation: Sendable {
    /// The test root, trusted beside Google's by `ANDROID_ATTEST_EXTRA_ROOT_CA_FILE` (or directly).
    package let root: CertificateIssuer
    let ca2: CertificateIssuer
    let ca3: CertificateIssuer
    /// The phone's attestation key, which signs its leaves.
    let attestationKey: CertificateIssuer
    let notBefore: Int64

    package static let package = "com.example.synthetic"
    /// The SHA-256 of the app's signing certificate.
    package static let signingDigest = SHA256.hash(Array("synthetic signing certificate".utf8))

    /// A root and three intermediates valid from `notBefore` for a year.
    package init(notBefore: Int64, name: String = "Synthetic Android Attestation Root") throws {
        let year: Int64 = 365 * 86_400
        func fields(_ commonName: String, _ serial: UInt64) -> CertificateFields {
            CertificateFields(
                commonName: commonName, serialNumber: serial, notBefore: notBefore - 60, notAfter: notBefore + year,
                isCertificateAuthority: true, keyUsage: [.keyCertSign])
        }
        root = try CertificateIssuer.selfSigned(fields(name, 1), key: PrivateKey.generateP256())
        let ca2Key = try PrivateKey.generateP256()
        ca2 = CertificateIssuer(certificate: try root.issue(fields("Droid CA2", 2), for: ca2Key.publicKey), key: ca2Key)
        let ca3Key = try PrivateKey.generateP256()
        ca3 = CertificateIssuer(certificate: try ca2.issue(fields("Droid CA3", 3), for: ca3Key.publicKey), key: ca3Key)
        let attestationKey = try PrivateKey.generateP256()
        self.attestationKey = CertificateIssuer(
            certificate: try ca3.issue(fields("a1b2c3d4", 0x0a1b_2c3d), for: attestationKey.publicKey),
            key: attestationKey)
        self.notBefore = notBefore
    }

    /// One phone's app key.
    package struct Device: Sendable {
        package let key: PrivateKey

        package init(rsa: Bool = false) throws {
            key = rsa ? try PrivateKey.generateRSA() : try PrivateKey.generateP256()
        }

        /// What the app sends to open a session.
        package func sessionSignature(challenge: String) throws -> [UInt8] {
            let message = Array("textgateway-android-session:".utf8) + Array(challenge.utf8)
            switch key.publicKey.kind {
            case .p256: return try key.signature(for: message, algorithm: .ecdsaP256SHA256DER)
            case .rsa: return try key.signature(for: message, algorithm: .rsaPKCS1v15SHA256)
            }
        }

        package var keyID: [UInt8] { SHA256.hash(key.publicKey.derSubjectPublicKeyInfo) }
    }

    /// What to change in an attestation.
    package struct Changes: Sendable {
        package var attestationSecurityLevel: Int64 = 1
        package var keyMintSecurityLevel: Int64 = 1
        package var origin: Int64 = 0
        package var packages = [SyntheticAndroidAttestation.package]
        package var digests = [SyntheticAndroidAttestation.signingDigest]
        package var bootState: Int64 = 0
        package var deviceLocked = true
        /// The root of trust in the software list instead of the hardware one (an emulator's).
        package var rootOfTrustInSoftware = false
        package var osPatchLevel: Int64 = 202_510
        /// The extension's value as given, instead of the one written from these fields.
        package var rawExtension: [UInt8]?
        /// A copy of the extension in the attestation key's certificate too.
        package var extensionInIntermediate = false
        /// Another issuer for the whole chain above the leaf.
        package var otherAuthority: SyntheticAndroidAttestation?

        package init() {}
    }

    /// The chain (DER, leaf first) of `device`'s key made with `challenge`.
    package func chain(_ device: Device, challenge: [UInt8], changes: Changes = Changes()) throws -> [[UInt8]] {
        if let other = changes.otherAuthority {
            var changes = changes
            changes.otherAuthority = nil
            return try other.chain(device, challenge: challenge, changes: changes)
        }
        let value = changes.rawExtension ?? Self.keyDescription(challenge: challenge, changes: changes)
        let extensionItem = CertificateExtension(oid: "1.3.6.1.4.1.11129.2.1.17", value: value)
        var issuer = attestationKey
        if changes.extensionInIntermediate {
            let key = try PrivateKey.generateP256()
            let certificate = try ca3.issue(
                CertificateFields(
                    commonName: "a1b2c3d4", serialNumber: 0x0a1b_2c3e, notBefore: notBefore - 60,
                    notAfter: notBefore + 86_400 * 365, isCertificateAuthority: true, keyUsage: [.keyCertSign],
                    extensions: [extensionItem]),
                for: key.publicKey)
            issuer = CertificateIssuer(certificate: certificate, key: key)
        }
        // A leaf dated as phones date theirs: from the epoch to 2106, whatever the clock says.
        let leaf = try issuer.issue(
            CertificateFields(
                commonName: "Android Keystore Key", serialNumber: 1, notBefore: 0, notAfter: 4_294_967_295,
                isCertificateAuthority: false, keyUsage: [.digitalSignature], extensions: [extensionItem]),
            for: device.key.publicKey)
        return [leaf.der, issuer.certificate.der, ca3.certificate.der, ca2.certificate.der, root.certificate.der]
    }

    /// A chain extended past `chain`'s leaf: a certificate signed by the attested key itself,
    /// with an extension of the attacker's choosing.
    package func extended(_ chain: [[UInt8]], by device: Device, challenge: [UInt8]) throws -> [[UInt8]] {
        let attested = CertificateIssuer(certificate: try X509Certificate(der: chain[0]), key: device.key)
        let fake = try attested.issue(
            CertificateFields(
                commonName: "Fake", serialNumber: 2, notBefore: 0, notAfter: 4_294_967_295,
                isCertificateAuthority: false, keyUsage: [.digitalSignature],
                extensions: [
                    CertificateExtension(
                        oid: "1.3.6.1.4.1.11129.2.1.17",
                        value: Self.keyDescription(challenge: challenge, changes: Changes()))
                ]),
            for: try PrivateKey.generateP256().publicKey)
        return [fake.der] + chain
    }

    /// The KeyDescription DER of `changes`, as a TEE of attestation version 300 writes it.
    package static func keyDescription(challenge: [UInt8], changes: Changes) -> [UInt8] {
        let applicationID = DER.sequence(
            DER.set(
                changes.packages.map { DER.sequence(DER.octetString(Array($0.utf8)) + DER.integer(1)) }.joined()
                    .map { $0 })
                + DER.set(changes.digests.map { DER.octetString($0) }.joined().map { $0 }))
        let rootOfTrust = DER.sequence(
            DER.octetString([UInt8](repeating: 0x11, count: 32)) + DER.tlv([0x01], [changes.deviceLocked ? 0x01 : 0x00])
                + DER.enumerated(changes.bootState) + DER.octetString([UInt8](repeating: 0x22, count: 32)))
        var software =
            DER.explicit(701, DER.integer(1_760_000_000_000)) + DER.explicit(709, DER.octetString(applicationID))
        var hardware =
            DER.explicit(1, DER.set(DER.integer(2))) + DER.explicit(2, DER.integer(3))
            + DER.explicit(3, DER.integer(256))
            + DER.explicit(10, DER.integer(1)) + DER.explicit(503, DER.tlv([0x05], []))
            + DER.explicit(702, DER.integer(changes.origin))
        if changes.rootOfTrustInSoftware {
            software += DER.explicit(704, rootOfTrust)
        } else {
            hardware += DER.explicit(704, rootOfTrust)
        }
        hardware += DER.explicit(705, DER.integer(160_000)) + DER.explicit(706, DER.integer(changes.osPatchLevel))
        return DER.sequence(
            DER.integer(300) + DER.enumerated(changes.attestationSecurityLevel) + DER.integer(300)
                + DER.enumerated(changes.keyMintSecurityLevel) + DER.octetString(challenge) + DER.octetString([])
                + DER.sequence(software) + DER.sequence(hardware))
    }

    /// Just enough of a DER writer for the extension.
    package enum DER {
        package static func tlv(_ tag: [UInt8], _ content: [UInt8]) -> [UInt8] {
            var length: [UInt8]
            if content.count < 0x80 {
                length = [UInt8(content.count)]
            } else {
                var bytes: [UInt8] = []
                var count = content.count
                while count > 0 {
                    bytes.insert(UInt8(count & 0xFF), at: 0)
                    count >>= 8
                }
                length = [0x80 | UInt8(bytes.count)] + bytes
            }
            return tag + length + content
        }

        package static func sequence(_ content: [UInt8]) -> [UInt8] { tlv([0x30], content) }
        package static func set(_ content: [UInt8]) -> [UInt8] { tlv([0x31], content) }
        package static func octetString(_ content: [UInt8]) -> [UInt8] { tlv([0x04], content) }
        package static func integer(_ value: Int64) -> [UInt8] { tlv([0x02], twosComplement(value)) }
        package static func enumerated(_ value: Int64) -> [UInt8] { tlv([0x0A], twosComplement(value)) }

        /// `[number] EXPLICIT`, in the high-tag-number form from 31 on.
        package static func explicit(_ number: UInt32, _ content: [UInt8]) -> [UInt8] {
            if number < 31 { return tlv([0xA0 | UInt8(number)], content) }
            var digits: [UInt8] = []
            var rest = number
            repeat {
                digits.insert(UInt8(rest & 0x7F) | (digits.isEmpty ? 0 : 0x80), at: 0)
                rest >>= 7
            } while rest > 0
            return tlv([0xBF] + digits, content)
        }

        static func twosComplement(_ value: Int64) -> [UInt8] {
            var bytes = withUnsafeBytes(of: value.bigEndian, Array.init)
            while bytes.count > 1, (bytes[0] == 0 && bytes[1] & 0x80 == 0) || (bytes[0] == 0xFF && bytes[1] & 0x80 != 0)
            {
                bytes.removeFirst()
            }
            return bytes
        }
    }
}
