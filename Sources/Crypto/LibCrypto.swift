import CCrypto

/// libcrypto, initialised before its first use, with the algorithms this module calls
/// fetched from the default provider once: an implicit fetch on every call costs more than
/// hashing a short token.
///
/// `@unchecked Sendable`: a fetched `EVP_MD` or `EVP_MAC` is an immutable, reference-counted
/// description of an algorithm that OpenSSL 3 lets any number of threads use at once; these
/// two are never freed.
struct LibCrypto: @unchecked Sendable {
    /// Every entry point reads this before its first libcrypto call (`static let` runs its
    /// initialiser once, whichever thread comes first); only CRYPTO_memcmp, a pure function,
    /// needs no initialisation.
    static let shared = LibCrypto()

    /// SHA-256 (`EVP_MD *`).
    let sha256: OpaquePointer
    /// HMAC (`EVP_MAC *`), keyed and told its digest per use.
    let hmac: OpaquePointer

    private init() {
        // Without libcrypto's initialisation or its default provider nothing in this module
        // can work, and no caller could recover: stop with libcrypto's reason.
        guard CCrypto_init() == 1 else { fatalError(CryptoError("OPENSSL_init_crypto failed").reason) }
        guard let sha256 = EVP_MD_fetch(nil, "SHA256", nil) else {
            fatalError(CryptoError("libcrypto has no SHA-256").reason)
        }
        guard let hmac = EVP_MAC_fetch(nil, "HMAC", nil) else {
            fatalError(CryptoError("libcrypto has no HMAC").reason)
        }
        self.sha256 = sha256
        self.hmac = hmac
    }

    /// Empties this thread's libcrypto error queue: a failed check leaves entries there that
    /// would otherwise be reported with the next, unrelated error.
    static func clearErrors() {
        ERR_clear_error()
    }
}
