import CCrypto

/// Random bytes for secrets, from libcrypto's CSPRNG (seeded and reseeded from the kernel).
package enum SecureRandom {
    /// `count` random bytes from `RAND_bytes`.
    package static func bytes(_ count: Int) -> [UInt8] {
        precondition(count >= 0, "a negative count of random bytes")
        _ = LibCrypto.shared
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var filled = 0
            while filled < count {
                let chunk = min(count - filled, Int(Int32.max))
                // A generator that fails cannot be trusted for what it gave before either, and a
                // secret made from fewer or weaker bytes could be guessed: no caller can do
                // anything safe with that, so stop rather than hand out a weak secret.
                guard RAND_bytes(buffer.baseAddress! + filled, Int32(chunk)) == 1 else {
                    fatalError(CryptoError("RAND_bytes failed").reason)
                }
                filled += chunk
            }
            initialized = count
        }
    }
}
