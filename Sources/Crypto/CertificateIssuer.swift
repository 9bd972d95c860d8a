import CCrypto

/// A certificate authority of one's own: a certificate and the private key that signs
/// certificates in its name.
///
/// For tests, benchmarks and an operator's test root under `--env testing`: chains shaped like
/// App Attest's (root → intermediate → a leaf carrying the nonce extension) without Apple's
/// keys. The gateway itself only verifies certificates.
///
/// ```swift
/// let rootKey = try PrivateKey.generateP256()
/// let root = try CertificateIssuer.selfSigned(
///     CertificateFields(commonName: "Test Root", serialNumber: 1, notBefore: start, notAfter: end,
///                       isCertificateAuthority: true, keyUsage: [.keyCertSign, .cRLSign]),
///     key: rootKey)
/// let leaf = try root.issue(CertificateFields(commonName: "device", serialNumber: 2, ...), for: deviceKey.publicKey)
/// ```
package struct CertificateIssuer: Sendable {
    /// The issuer's certificate: its subject is the issuer name of what it signs.
    package let certificate: X509Certificate
    /// The key that signs.
    package let key: PrivateKey

    /// The issuer whose certificate is `certificate` and whose signing key is `key`.
    ///
    /// The key is not checked against the certificate, so that a test can make certificates
    /// whose signatures do not verify (a leaf signed by another key in an intermediate's name).
    package init(certificate: X509Certificate, key: PrivateKey) {
        self.certificate = certificate
        self.key = key
    }

    /// A root: the certificate of `fields` for `key`'s public key, signed by `key` itself,
    /// its issuer name its own subject name.
    package static func selfSigned(_ fields: CertificateFields, key: PrivateKey) throws(CryptoError)
        -> CertificateIssuer
    {
        let certificate = try make(fields, subjectKey: key.publicKey, issuer: nil, signingKey: key)
        return CertificateIssuer(certificate: certificate, key: key)
    }

    /// The certificate of `fields` for `subjectKey`, in this issuer's name and signed by its key.
    package func issue(_ fields: CertificateFields, for subjectKey: PublicKey) throws(CryptoError) -> X509Certificate {
        try Self.make(fields, subjectKey: subjectKey, issuer: certificate, signingKey: key)
    }

    /// A version 3 certificate signed with SHA-256 in the name of `issuer`, or in its own name
    /// when `issuer` is nil.
    private static func make(
        _ fields: CertificateFields, subjectKey: PublicKey, issuer: X509Certificate?, signingKey: PrivateKey
    ) throws(CryptoError) -> X509Certificate {
        _ = LibCrypto.shared
        guard let certificate = X509_new() else { throw CryptoError("X509_new failed") }
        defer { X509_free(certificate) }
        guard X509_set_version(certificate, Int(X509_VERSION_3)) == 1,
            ASN1_INTEGER_set_uint64(X509_get_serialNumber(certificate), fields.serialNumber) == 1
        else { throw CryptoError("the certificate's version or serial number cannot be set") }
        guard let subject = X509_get_subject_name(certificate),
            X509_NAME_add_entry_by_NID(subject, NID_commonName, MBSTRING_UTF8, fields.commonName, -1, -1, 0) == 1,
            X509_set_issuer_name(certificate, issuer.map { X509_get_subject_name($0.certificate.pointer) } ?? subject)
                == 1
        else { throw CryptoError("the certificate's names cannot be set") }
        guard ASN1_TIME_set(X509_getm_notBefore(certificate), time_t(fields.notBefore)) != nil,
            ASN1_TIME_set(X509_getm_notAfter(certificate), time_t(fields.notAfter)) != nil
        else { throw CryptoError("the certificate's validity cannot be set") }
        guard X509_set_pubkey(certificate, subjectKey.key.pointer) == 1 else {
            throw CryptoError("the certificate's public key cannot be set")
        }
        guard CCrypto_add_basic_constraints(certificate, fields.isCertificateAuthority ? 1 : 0) == 1 else {
            throw CryptoError("the basicConstraints extension cannot be added")
        }
        if !fields.keyUsage.isEmpty { try addKeyUsage(fields.keyUsage, to: certificate) }
        // The key identifiers RFC 5280 §4.2.1.1-2 asks for: a verifier picks among issuers of
        // one name by them. A root, its own issuer, needs no authority key identifier.
        let subjectKeyID = try keyIdentifier(of: certificate)
        try add(
            CertificateExtension(oid: "2.5.29.14", value: [0x04, UInt8(subjectKeyID.count)] + subjectKeyID),
            to: certificate)
        if let issuer {
            // SEQUENCE { [0] IMPLICIT keyIdentifier }
            let authorityKeyID = try keyIdentifier(of: issuer)
            let value = [0x30, UInt8(authorityKeyID.count + 2), 0x80, UInt8(authorityKeyID.count)] + authorityKeyID
            try add(CertificateExtension(oid: "2.5.29.35", value: value), to: certificate)
        }
        for `extension` in fields.extensions { try add(`extension`, to: certificate) }
        guard X509_sign(certificate, signingKey.key.pointer, LibCrypto.shared.sha256) > 0 else {
            throw CryptoError("signing the certificate failed")
        }
        let length = Int(CCrypto_certificate_der(certificate, nil))
        guard length > 0 else { throw CryptoError("the certificate cannot be encoded") }
        var der = [UInt8](repeating: 0, count: length)
        let written = der.withUnsafeMutableBufferPointer { Int(CCrypto_certificate_der(certificate, $0.baseAddress)) }
        guard written == length else { throw CryptoError("the certificate cannot be encoded") }
        // Read back from its DER: the certificate handed out is exactly what a verifier reads.
        return try X509Certificate(der: der)
    }

    /// The SHA-1 of the certificate's subjectPublicKey bits: RFC 5280 §4.2.1.2's first method.
    private static func keyIdentifier(of certificate: OpaquePointer) throws(CryptoError) -> [UInt8] {
        var identifier = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        guard X509_pubkey_digest(certificate, EVP_sha1(), &identifier, &length) == 1 else {
            throw CryptoError("the key identifier cannot be computed")
        }
        return Array(identifier.prefix(Int(length)))
    }

    /// The issuer's own subject key identifier when its certificate has one (the authority
    /// key identifier must match it, however it was computed), or else one computed as ours.
    private static func keyIdentifier(of issuer: X509Certificate) throws(CryptoError) -> [UInt8] {
        if let value = issuer.extensionValue(oid: "2.5.29.14"), value.count >= 3, value.count <= 66,
            value[0] == 0x04, Int(value[1]) == value.count - 2
        {
            return Array(value[2...])
        }
        return try keyIdentifier(of: issuer.certificate.pointer)
    }

    /// Adds a critical keyUsage extension (RFC 5280 §4.2.1.3 asks for it to be critical).
    private static func addKeyUsage(_ usage: CertificateKeyUsage, to certificate: OpaquePointer) throws(CryptoError) {
        guard let bits = ASN1_BIT_STRING_new() else { throw CryptoError("ASN1_BIT_STRING_new failed") }
        defer { ASN1_BIT_STRING_free(bits) }
        for bit in 0..<9 where usage.rawValue & (1 << bit) != 0 {
            guard ASN1_BIT_STRING_set_bit(bits, Int32(bit), 1) == 1 else {
                throw CryptoError("ASN1_BIT_STRING_set_bit failed")
            }
        }
        guard X509_add1_ext_i2d(certificate, NID_key_usage, bits, 1, UInt(X509V3_ADD_DEFAULT)) == 1 else {
            throw CryptoError("the keyUsage extension cannot be added")
        }
    }

    private static func add(_ extension: CertificateExtension, to certificate: OpaquePointer) throws(CryptoError) {
        guard let object = asn1Object(dottedDecimal: `extension`.oid) else {
            throw CryptoError("\(`extension`.oid) is not an object identifier in dotted decimal")
        }
        defer { ASN1_OBJECT_free(object) }
        guard let value = ASN1_OCTET_STRING_new() else { throw CryptoError("ASN1_OCTET_STRING_new failed") }
        defer { ASN1_OCTET_STRING_free(value) }
        let set = `extension`.value.withUnsafeBufferPointer {
            ASN1_OCTET_STRING_set(value, $0.baseAddress, Int32($0.count))
        }
        guard set == 1,
            let made = X509_EXTENSION_create_by_OBJ(nil, object, `extension`.isCritical ? 1 : 0, value)
        else { throw CryptoError("the extension \(`extension`.oid) cannot be made") }
        defer { X509_EXTENSION_free(made) }
        // X509_add_ext adds a copy.
        guard X509_add_ext(certificate, made, -1) == 1 else {
            throw CryptoError("the extension \(`extension`.oid) cannot be added")
        }
    }
}

/// What a ``CertificateIssuer`` writes into a certificate besides the keys: the subject's
/// common name, the serial number, the validity, basicConstraints (always, critical), keyUsage
/// (critical, when not empty) and any other extensions. The issuer adds the subject key
/// identifier, and the authority key identifier to what is not self-signed.
package struct CertificateFields: Sendable, Hashable {
    /// The subject's common name (the subject name has no other attribute).
    package var commonName: String
    package var serialNumber: UInt64
    /// The start of the validity period, in seconds since the Unix epoch.
    package var notBefore: Int64
    /// The end of the validity period, in seconds since the Unix epoch (see
    /// ``X509Certificate/notAfter``).
    package var notAfter: Int64
    /// The basicConstraints cA flag: whether the subject may issue certificates (no path
    /// length limit).
    package var isCertificateAuthority: Bool
    package var keyUsage: CertificateKeyUsage
    /// Extensions after basicConstraints, keyUsage and the key identifiers, in this order.
    package var extensions: [CertificateExtension]

    package init(
        commonName: String, serialNumber: UInt64, notBefore: Int64, notAfter: Int64,
        isCertificateAuthority: Bool, keyUsage: CertificateKeyUsage, extensions: [CertificateExtension] = []
    ) {
        self.commonName = commonName
        self.serialNumber = serialNumber
        self.notBefore = notBefore
        self.notAfter = notAfter
        self.isCertificateAuthority = isCertificateAuthority
        self.keyUsage = keyUsage
        self.extensions = extensions
    }
}

/// A certificate extension given by its parts: what ``X509Certificate/extensionValue(oid:)``
/// reads back.
package struct CertificateExtension: Sendable, Hashable {
    /// The extension's object identifier in dotted decimal, such as `"1.2.840.113635.100.8.2"`.
    package var oid: String
    /// The DER of what the extension holds (the content of its `extnValue` OCTET STRING).
    package var value: [UInt8]
    /// A verifier refuses a certificate with a critical extension it does not know.
    package var isCritical: Bool

    package init(oid: String, value: [UInt8], isCritical: Bool = false) {
        self.oid = oid
        self.value = value
        self.isCritical = isCritical
    }
}

/// The purposes of a certificate's key (RFC 5280 §4.2.1.3), each the bit of its number.
package struct CertificateKeyUsage: OptionSet, Sendable, Hashable {
    package let rawValue: UInt16

    package init(rawValue: UInt16) {
        self.rawValue = rawValue
    }

    package static let digitalSignature = CertificateKeyUsage(rawValue: 1 << 0)
    package static let contentCommitment = CertificateKeyUsage(rawValue: 1 << 1)
    package static let keyEncipherment = CertificateKeyUsage(rawValue: 1 << 2)
    package static let dataEncipherment = CertificateKeyUsage(rawValue: 1 << 3)
    package static let keyAgreement = CertificateKeyUsage(rawValue: 1 << 4)
    /// Signing certificates: a certificate authority's key needs it when keyUsage is present.
    package static let keyCertSign = CertificateKeyUsage(rawValue: 1 << 5)
    package static let cRLSign = CertificateKeyUsage(rawValue: 1 << 6)
    package static let encipherOnly = CertificateKeyUsage(rawValue: 1 << 7)
    package static let decipherOnly = CertificateKeyUsage(rawValue: 1 << 8)
}
