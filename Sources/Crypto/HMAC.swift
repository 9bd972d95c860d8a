import CCrypto

/// HMAC (RFC 2104), from libcrypto.
package enum HMAC {
    /// The 32-byte HMAC-SHA-256 of `message` under `key` (a key of any length, as RFC 2104
    /// allows: longer than 64 bytes it is hashed first).
    @inlinable
    package static func sha256(key: [UInt8], message: some Sequence<UInt8>) -> [UInt8] {
        key.withContiguousBytes { key in message.withContiguousBytes { tag(key: key, message: $0) } }
    }

    /// The HMAC-SHA-256 of `message` under `key`, whose base addresses are not nil.
    @usableFromInline
    static func tag(key: UnsafeBufferPointer<UInt8>, message: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        // The EVP_MAC fetched once, a context per call: quicker than the HMAC() one-shot,
        // which fetches HMAC and SHA-256 again each time.
        guard let context = EVP_MAC_CTX_new(LibCrypto.shared.hmac) else {
            fatalError(CryptoError("EVP_MAC_CTX_new failed").reason)
        }
        defer { EVP_MAC_CTX_free(context) }
        let fed =
            CCrypto_hmac_sha256_init(context, key.baseAddress, key.count) == 1
            && EVP_MAC_update(context, message.baseAddress, message.count) == 1
        var finished = false
        let tag = [UInt8](unsafeUninitializedCapacity: SHA256.digestByteCount) { buffer, count in
            var length = 0
            finished = fed && EVP_MAC_final(context, buffer.baseAddress, &length, buffer.count) == 1
            count = finished ? length : 0
        }
        // These fail only when libcrypto cannot allocate: there is no tag to hand back.
        guard finished, tag.count == SHA256.digestByteCount else {
            fatalError(CryptoError("HMAC-SHA-256 failed").reason)
        }
        return tag
    }
}
