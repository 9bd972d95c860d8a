import CCrypto

/// An `EVP_PKEY`, freed with the last reference to it: the handle behind ``PublicKey`` and
/// ``PrivateKey``.
///
/// `@unchecked Sendable`: the key is never changed once built, and OpenSSL 3 lets any
/// number of threads verify and sign with one `EVP_PKEY` at once as long as each uses its
/// own context, which every operation in this module makes for itself (an `EVP_MD_CTX` per
/// call, never shared).
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    /// Takes ownership of `pointer`.
    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// The key's public part as DER SubjectPublicKeyInfo (`i2d_PUBKEY`); nil only when
    /// libcrypto cannot allocate.
    var derSubjectPublicKeyInfo: [UInt8]? {
        let length = Int(CCrypto_public_key_der(pointer, nil))
        guard length > 0 else { return nil }
        var der = [UInt8](repeating: 0, count: length)
        let written = der.withUnsafeMutableBufferPointer { Int(CCrypto_public_key_der(pointer, $0.baseAddress)) }
        return written == length ? der : nil
    }
}
