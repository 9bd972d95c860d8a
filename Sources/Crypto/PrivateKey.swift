import CCrypto

/// A private key that signs: for tests, benchmarks and operators' tools (the gateway itself
/// only verifies).
package struct PrivateKey: Sendable {
    let key: EVPKey
    /// The public half, on a key of its own.
    package let publicKey: PublicKey

    private init(_ key: EVPKey) throws(CryptoError) {
        self.key = key
        // Through its encoding, so that the public key holds none of the private numbers.
        guard let der = key.derSubjectPublicKeyInfo else {
            throw CryptoError("the new key's public half cannot be encoded")
        }
        publicKey = try PublicKey(derSubjectPublicKeyInfo: der)
    }

    /// A new RSA key of `bits` bits (2048 to 16384), public exponent 65537.
    package static func generateRSA(bits: Int = 2048) throws(CryptoError) -> PrivateKey {
        guard (2048...16384).contains(bits) else {
            throw CryptoError("an RSA key of \(bits) bits: 2048 to 16384 are made")
        }
        _ = LibCrypto.shared
        guard let generated = CCrypto_generate_rsa(Int32(bits)) else {
            throw CryptoError("generating an RSA key failed")
        }
        return try PrivateKey(EVPKey(generated))
    }

    /// The P-256 key of an unencrypted PEM private key (PKCS #8 `PRIVATE KEY`, as Apple's
    /// `AuthKey_….p8` files are, or `EC PRIVATE KEY`).
    package init(pem: String) throws(CryptoError) {
        _ = LibCrypto.shared
        let text = Array(pem.utf8)
        guard text.count <= 1 << 20 else { throw CryptoError("the PEM text is too long") }
        let decoded = text.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { CCrypto_private_key_from_pem($0.baseAddress, Int32($0.count)) }
        }
        guard let decoded else {
            LibCrypto.clearErrors()
            throw CryptoError("no unencrypted PEM private key in the text")
        }
        let key = EVPKey(decoded)
        guard CCrypto_is_p256(decoded) == 1 else { throw CryptoError("only P-256 private keys are read") }
        try self.init(key)
    }

    /// The key as unencrypted PKCS #8 PEM (`-----BEGIN PRIVATE KEY-----`).
    package var pem: String {
        var text: UnsafeMutablePointer<CChar>?
        var length = 0
        guard CCrypto_private_key_pem(key.pointer, &text, &length) == 1, let text else {
            fatalError(CryptoError("PEM_write_bio_PrivateKey failed").reason)
        }
        defer { CCrypto_free(text) }
        return String(cString: text)
    }

    /// A new P-256 key.
    package static func generateP256() throws(CryptoError) -> PrivateKey {
        _ = LibCrypto.shared
        guard let generated = CCrypto_generate_p256() else { throw CryptoError("generating a P-256 key failed") }
        return try PrivateKey(EVPKey(generated))
    }

    /// The signature of `message` under `algorithm`: for RS256 as many bytes as the modulus,
    /// for ES256 the 64 bytes r ‖ s that JWS uses (each left-padded to 32 bytes), for
    /// ``SignatureAlgorithm/ecdsaP256SHA256DER`` a DER ECDSA-Sig-Value of 8 to 72 bytes.
    ///
    /// Throws when the algorithm is not this key's kind.
    package func signature(for message: some Collection<UInt8>, algorithm: SignatureAlgorithm) throws(CryptoError)
        -> [UInt8]
    {
        switch (algorithm, publicKey.kind) {
        case (.rsaPKCS1v15SHA256, .rsa):
            return try sign(message)
        case (.ecdsaP256SHA256, .p256):
            let der = try sign(message)
            var raw = [UInt8](repeating: 0, count: 64)
            let converted = der.withUnsafeBufferPointer { der in
                raw.withUnsafeMutableBufferPointer {
                    CCrypto_ecdsa_der_to_raw(der.baseAddress, der.count, $0.baseAddress, 32)
                }
            }
            guard converted == 1 else { throw CryptoError("libcrypto's ECDSA signature cannot be read") }
            return raw
        case (.ecdsaP256SHA256DER, .p256):
            return try sign(message)
        case (.rsaPKCS1v15SHA256, .p256):
            throw CryptoError("a P-256 key cannot sign RS256")
        case (.ecdsaP256SHA256, .rsa), (.ecdsaP256SHA256DER, .rsa):
            throw CryptoError("an RSA key cannot sign ECDSA")
        }
    }

    /// libcrypto's signature of the SHA-256 of `message` (DER for ECDSA).
    private func sign(_ message: some Collection<UInt8>) throws(CryptoError) -> [UInt8] {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError("EVP_MD_CTX_new failed") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, LibCrypto.shared.sha256, nil, key.pointer) == 1 else {
            throw CryptoError("EVP_DigestSignInit failed")
        }
        var signature = [UInt8](repeating: 0, count: Int(EVP_PKEY_get_size(key.pointer)))
        var length = signature.count
        let signed = message.withContiguousBytes { bytes in
            signature.withUnsafeMutableBufferPointer {
                EVP_DigestSign(context, $0.baseAddress, &length, bytes.baseAddress, bytes.count) == 1
            }
        }
        guard signed else { throw CryptoError("EVP_DigestSign failed") }
        signature.removeSubrange(length...)
        return signature
    }
}
