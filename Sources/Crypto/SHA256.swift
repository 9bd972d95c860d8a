import CCrypto

/// SHA-256 (FIPS 180-4), from libcrypto.
///
/// ```swift
/// SHA256.hexDigest("abc".utf8)
/// // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// ```
package enum SHA256 {
    /// The length of a digest in bytes.
    package static let digestByteCount = 32

    /// The 32-byte digest of `bytes`.
    ///
    /// Bytes in contiguous memory (an array, a native string's UTF-8) are hashed in place;
    /// any other sequence is copied first.
    @inlinable
    package static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        bytes.withContiguousBytes { digest(of: $0) }
    }

    /// The digest of `bytes` as 64 lower-case hexadecimal digits.
    @inlinable
    package static func hexDigest(_ bytes: some Sequence<UInt8>) -> String {
        hexString(hash(bytes))
    }

    /// The digest of the bytes of `input`, whose base address is not nil.
    @usableFromInline
    static func digest(of input: UnsafeBufferPointer<UInt8>) -> [UInt8] {
        // EVP_Digest with the SHA-256 fetched once: several times quicker on short inputs
        // than the SHA256() one-shot, which fetches the algorithm again on every call.
        let sha256 = LibCrypto.shared.sha256
        return [UInt8](unsafeUninitializedCapacity: digestByteCount) { digest, count in
            // It fails only when it cannot allocate its context: nothing to hand back.
            guard EVP_Digest(input.baseAddress, input.count, digest.baseAddress, nil, sha256, nil) == 1 else {
                fatalError(CryptoError("EVP_Digest(SHA-256) failed").reason)
            }
            count = digestByteCount
        }
    }

    /// `bytes` as lower-case hexadecimal, two digits a byte.
    package static func hexString(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
