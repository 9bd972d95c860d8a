import CCrypto

/// An X.509 certificate, read from its DER or PEM: its validity, its extensions and its
/// subject's public key, and the element of a chain that ``X509TrustStore`` verifies.
///
/// Reading a certificate checks its encoding only: whether it is valid, and for whom, is what
/// ``X509TrustStore/verify(leaf:intermediates:at:)`` decides.
package struct X509Certificate: Sendable {
    let certificate: X509Handle

    /// The certificate's DER, as it was read (or as ``CertificateIssuer`` made it).
    package let der: [UInt8]
    /// The start of the validity period, in seconds since the Unix epoch.
    package let notBefore: Int64
    /// The end of the validity period, in seconds since the Unix epoch. libcrypto counts the
    /// certificate expired from this second on (RFC 5280 would count it valid through it).
    package let notAfter: Int64

    /// The certificate whose DER is `der`, which must hold that certificate and nothing after it.
    package init(der: [UInt8]) throws(CryptoError) {
        _ = LibCrypto.shared
        let decoded = der.withUnsafeBufferPointer { CCrypto_certificate_from_der($0.baseAddress, $0.count) }
        guard let decoded else { throw CryptoError("not a DER certificate, or bytes after it") }
        let certificate = X509Handle(decoded)
        var notBefore: Int64 = 0
        var notAfter: Int64 = 0
        guard CCrypto_asn1_time_unix(X509_get0_notBefore(decoded), &notBefore) == 1,
            CCrypto_asn1_time_unix(X509_get0_notAfter(decoded), &notAfter) == 1
        else { throw CryptoError("the certificate's validity cannot be read") }
        self.certificate = certificate
        self.der = der
        self.notBefore = notBefore
        self.notAfter = notAfter
    }

    /// The certificate of the first `-----BEGIN CERTIFICATE-----` block of `pem` (text and
    /// other blocks before it are skipped), whose content must be exactly one DER certificate.
    package init(pem: String) throws(CryptoError) {
        _ = LibCrypto.shared
        let text = Array(pem.utf8)
        guard text.count <= Int(Int32.max) else { throw CryptoError("the PEM text is too long") }
        var data: UnsafeMutablePointer<UInt8>?
        var length = 0
        let found = text.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) {
                CCrypto_certificate_pem_block($0.baseAddress, Int32($0.count), &data, &length)
            }
        }
        guard found == 1, let data else { throw CryptoError("no PEM certificate in the text") }
        let der = Array(UnsafeBufferPointer(start: data, count: length))
        CCrypto_free(data)
        try self.init(der: der)
    }

    /// The certificate as PEM: `-----BEGIN CERTIFICATE-----`, the DER in base64 in lines of
    /// 64 characters, `-----END CERTIFICATE-----`, each line ending in a line feed.
    package var pem: String {
        var text = "-----BEGIN CERTIFICATE-----\n"
        // 48 bytes a line become 64 characters, and EVP_EncodeBlock's closing NUL.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 65) { line in
            var start = 0
            while start < der.count {
                let end = min(start + 48, der.count)
                let written = der[start..<end].withUnsafeBufferPointer {
                    EVP_EncodeBlock(line.baseAddress, $0.baseAddress, Int32($0.count))
                }
                text += String(decoding: UnsafeBufferPointer(rebasing: line[..<Int(written)]), as: UTF8.self)
                text += "\n"
                start = end
            }
        }
        return text + "-----END CERTIFICATE-----\n"
    }

    /// The value of the extension `oid` (dotted decimal, such as `"2.5.29.19"`): the content
    /// of its `extnValue` OCTET STRING, which is the DER of what the extension holds.
    ///
    /// nil when the certificate has no such extension, when it has two of them (RFC 5280
    /// §4.2 allows one; which one a reader took would be a guess), and when `oid` is not an
    /// object identifier in dotted decimal (no space, no trailing dot, no leading zero).
    package func extensionValue(oid: String) -> [UInt8]? {
        _ = LibCrypto.shared
        guard let object = asn1Object(dottedDecimal: oid) else { return nil }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(certificate.pointer, object, -1)
        guard index >= 0, X509_get_ext_by_OBJ(certificate.pointer, object, index) < 0 else { return nil }
        guard let found = X509_get_ext(certificate.pointer, index), let value = X509_EXTENSION_get_data(found) else {
            return nil
        }
        let count = Int(ASN1_STRING_length(value))
        guard count > 0, let bytes = ASN1_STRING_get0_data(value) else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: count))
    }

    /// The subject's public key, when it is one that ``PublicKey`` takes (RSA of 2048 to
    /// 16384 bits, or P-256); throws for any other (such as the P-384 key of a root).
    package var publicKey: PublicKey {
        get throws(CryptoError) {
            guard let key = X509_get0_pubkey(certificate.pointer) else {
                throw CryptoError("the certificate's public key cannot be read")
            }
            // Through its encoding: the public key gets an EVP_PKEY of its own, with the
            // checks every PublicKey gets.
            let length = Int(CCrypto_public_key_der(key, nil))
            guard length > 0 else { throw CryptoError("the certificate's public key cannot be encoded") }
            var der = [UInt8](repeating: 0, count: length)
            let written = der.withUnsafeMutableBufferPointer { Int(CCrypto_public_key_der(key, $0.baseAddress)) }
            guard written == length else { throw CryptoError("the certificate's public key cannot be encoded") }
            return try PublicKey(derSubjectPublicKeyInfo: der)
        }
    }

    /// The subject's P-256 public point in SEC 1's uncompressed form, 0x04 ‖ x ‖ y (65
    /// bytes), whatever form the certificate carries it in; nil when the key is not P-256.
    package var p256PublicPoint: [UInt8]? {
        guard let key = X509_get0_pubkey(certificate.pointer) else {
            LibCrypto.clearErrors()
            return nil
        }
        guard CCrypto_is_p256(key) == 1 else { return nil }
        var point = [UInt8](repeating: 0, count: 65)
        point[0] = 0x04
        let read = point.withUnsafeMutableBufferPointer { point in
            CCrypto_ec_coordinates(key, point.baseAddress! + 1, point.baseAddress! + 33, 32)
        }
        guard read == 1 else {
            LibCrypto.clearErrors()
            return nil
        }
        return point
    }
}

extension X509Certificate {
    /// The DER of the subject name, as the certificate holds it.
    package var subjectNameDER: [UInt8] { nameDER(which: 0) }

    /// The DER of the issuer name, as the certificate holds it: a chain links where it is
    /// byte for byte the subject name of the certificate above.
    package var issuerNameDER: [UInt8] { nameDER(which: 1) }

    /// Whether the issuer name is the subject name: a root's, or a certificate that claims to be one.
    package var isSelfIssued: Bool { subjectNameDER == issuerNameDER }

    /// Whether the subject name has a serialNumber attribute (2.5.4.5).
    package var subjectHasSerialNumber: Bool { CCrypto_subject_has_serial_number(certificate.pointer) == 1 }

    /// The DER SubjectPublicKeyInfo, as the certificate holds it; empty when it cannot be encoded.
    package var subjectPublicKeyInfoDER: [UInt8] {
        read { CCrypto_certificate_spki_der(certificate.pointer, $0) }
    }

    /// The serial number in lowercase hexadecimal without leading zeros (`"0"` for zero, a
    /// leading `-` when negative): how revocation lists name certificates.
    package var serialHex: String {
        // RFC 5280 allows 20 octets; a certificate in the wild may have more, never 1,024.
        var text = [CChar](repeating: 0, count: 1024)
        let length = CCrypto_certificate_serial_hex(certificate.pointer, &text, Int32(text.count))
        guard length >= 0 else {
            LibCrypto.clearErrors()
            return ""
        }
        return String(decoding: text[..<Int(length)].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether `issuer`'s public key verifies this certificate's signature, whatever their
    /// names, dates and extensions say.
    package func isSigned(by issuer: X509Certificate) -> Bool {
        let verified = withExtendedLifetime(issuer) {
            CCrypto_certificate_signed_by(certificate.pointer, issuer.certificate.pointer) == 1
        }
        if !verified { LibCrypto.clearErrors() }
        return verified
    }

    /// How many extensions `oid` (dotted decimal) the certificate has; 0 for an `oid` that is
    /// not one.
    package func extensionCount(oid: String) -> Int {
        guard let object = asn1Object(dottedDecimal: oid) else { return 0 }
        defer { ASN1_OBJECT_free(object) }
        return Int(CCrypto_extension_count(certificate.pointer, object))
    }

    private func nameDER(which: Int32) -> [UInt8] {
        read { CCrypto_certificate_name_der(certificate.pointer, which, $0) }
    }

    /// The bytes an i2d-style function writes: its length with a NULL buffer, then the bytes.
    private func read(_ encode: (UnsafeMutablePointer<UInt8>?) -> Int32) -> [UInt8] {
        let length = Int(encode(nil))
        guard length > 0 else {
            LibCrypto.clearErrors()
            return []
        }
        var bytes = [UInt8](repeating: 0, count: length)
        let written = bytes.withUnsafeMutableBufferPointer { Int(encode($0.baseAddress)) }
        guard written == length else {
            LibCrypto.clearErrors()
            return []
        }
        return bytes
    }
}

/// The `ASN1_OBJECT` of `oid` (free it with `ASN1_OBJECT_free`): nil unless it is two or more
/// arcs of decimal digits joined by dots, without leading zeros, the first arc 0, 1 or 2.
/// OBJ_txt2obj alone is laxer: it also takes a trailing dot or space.
func asn1Object(dottedDecimal oid: String) -> OpaquePointer? {
    let arcs = oid.utf8.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
    guard arcs.count >= 2,
        arcs.allSatisfy({ arc in
            !arc.isEmpty && arc.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
                && (arc.count == 1 || arc.first != UInt8(ascii: "0"))
        }),
        arcs[0].count == 1, arcs[0].first! <= UInt8(ascii: "2")
    else { return nil }
    // no_name = 1: the text is read as digits only, never as a short or long name.
    guard let object = OBJ_txt2obj(oid, 1) else {
        LibCrypto.clearErrors()
        return nil
    }
    return object
}

/// An `X509`, freed with the last reference to it: the handle behind ``X509Certificate``.
///
/// `@unchecked Sendable`: the certificate is never changed once read. libcrypto fills its
/// caches of a certificate's extensions under a lock of the certificate's own, and
/// verification only reads the certificate, so any number of threads may read it and verify
/// chains holding it at once.
final class X509Handle: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_free(pointer)
    }
}
