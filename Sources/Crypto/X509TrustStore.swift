import CCrypto

/// Root certificates, and the verification of a certificate chain that ends at one of them.
///
/// Only the roots given are trusted: never the system's certificates, and never an
/// intermediate on its own (a chain must reach a root). The time of the check is a
/// parameter, so a test or an injected clock decides what is expired.
///
/// Built once and then shared: any number of tasks may verify against one store at once.
package struct X509TrustStore: Sendable {
    let store: X509StoreHandle

    /// A store that trusts `roots` and nothing else (none: it verifies no chain).
    package init(roots: [X509Certificate]) {
        _ = LibCrypto.shared
        // Without a lookup method the store finds issuers among the certificates added here
        // only: no directory and no file is ever read.
        guard let store = X509_STORE_new() else { fatalError(CryptoError("X509_STORE_new failed").reason) }
        let handle = X509StoreHandle(store)
        for root in roots {
            // The store takes a reference of its own. This fails only when libcrypto cannot
            // allocate (a root given twice is kept once).
            guard X509_STORE_add_cert(store, root.certificate.pointer) == 1 else {
                fatalError(CryptoError("X509_STORE_add_cert failed").reason)
            }
        }
        self.store = handle
    }

    /// Checks that `leaf` chains up to one of the roots through certificates of
    /// `intermediates` (in any order; not trusted themselves), with every certificate of the
    /// chain valid at `unixSeconds` (from its `notBefore` to the second before its `notAfter`,
    /// as libcrypto counts), each issuer a certificate authority whose signature on
    /// the certificate below it verifies, and no critical extension libcrypto does not know.
    ///
    /// Throws a ``CryptoError`` naming the check that failed and the place of the certificate
    /// in the chain (0 is the leaf), never any certificate's content.
    package func verify(leaf: X509Certificate, intermediates: [X509Certificate], at unixSeconds: Int64)
        throws(CryptoError)
    {
        let pointers: [OpaquePointer?] = intermediates.map { $0.certificate.pointer }
        var error: Int32 = 0
        var depth: Int32 = 0
        let result = withExtendedLifetime((leaf, intermediates)) {
            pointers.withUnsafeBufferPointer {
                CCrypto_verify_certificate(
                    store.pointer, leaf.certificate.pointer, $0.baseAddress, Int32($0.count), unixSeconds, &error,
                    &depth
                )
            }
        }
        switch result {
        case 1:
            return
        case 0:
            LibCrypto.clearErrors()
            let reason = X509_verify_cert_error_string(Int(error)).map { String(cString: $0) } ?? "error \(error)"
            throw CryptoError(
                "the certificate chain does not verify: \(reason) (certificate \(depth) of the chain, 0 being the leaf)"
            )
        default:
            throw CryptoError("libcrypto could not verify the certificate chain")
        }
    }
}

/// An `X509_STORE`, freed with the last reference to it: the handle behind ``X509TrustStore``.
///
/// `@unchecked Sendable`: nothing is added to the store after it is built, and libcrypto
/// lets any number of threads verify against one store at once, each with an
/// `X509_STORE_CTX` of its own (the store's lookups take its lock).
final class X509StoreHandle: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        X509_STORE_free(pointer)
    }
}
