import CCrypto

/// CMS SignedData (RFC 5652) with its content embedded: what App Attest receipts are.
package enum CMSSignedData {
    /// The content of `der` when its signature verifies and its signer's certificate chains to
    /// one of `roots` (and to nothing else: no system store) with every certificate valid at
    /// `unixSeconds`. The signer's certificate and intermediates come from `der` itself.
    package static func verifiedContent(_ der: [UInt8], roots: [X509Certificate], at unixSeconds: Int64)
        throws(CryptoError) -> [UInt8]
    {
        _ = LibCrypto.shared
        let pointers: [OpaquePointer?] = roots.map { $0.certificate.pointer }
        var content: UnsafeMutablePointer<UInt8>?
        var length = 0
        let result = withExtendedLifetime(roots) {
            der.withUnsafeBufferPointer { der in
                pointers.withUnsafeBufferPointer {
                    CCrypto_cms_verify(
                        der.baseAddress, der.count, $0.baseAddress, Int32($0.count), unixSeconds, &content, &length)
                }
            }
        }
        LibCrypto.clearErrors()
        switch result {
        case 1:
            guard let content else { return [] }
            defer { CCrypto_free(content) }
            return Array(UnsafeBufferPointer(start: content, count: length))
        case 0:
            throw CryptoError("the signed data does not verify against the trusted roots")
        default:
            throw CryptoError("libcrypto could not verify the signed data")
        }
    }

    /// `content` signed by `signer`'s key in its certificate's name, carrying `certificates`
    /// (the intermediates) too. For tests and stand-ins: the gateway only verifies.
    package static func sign(_ content: [UInt8], signer: CertificateIssuer, certificates: [X509Certificate])
        throws(CryptoError) -> [UInt8]
    {
        _ = LibCrypto.shared
        let pointers: [OpaquePointer?] = certificates.map { $0.certificate.pointer }
        var der: UnsafeMutablePointer<UInt8>?
        var length = 0
        let signed = withExtendedLifetime((signer, certificates)) {
            content.withUnsafeBufferPointer { content in
                pointers.withUnsafeBufferPointer {
                    CCrypto_cms_sign(
                        content.baseAddress, content.count, signer.certificate.certificate.pointer,
                        signer.key.key.pointer, $0.baseAddress, Int32($0.count), &der, &length)
                }
            }
        }
        guard signed == 1, let der else {
            LibCrypto.clearErrors()
            throw CryptoError("libcrypto could not sign the data")
        }
        defer { CCrypto_free(der) }
        return Array(UnsafeBufferPointer(start: der, count: length))
    }
}
