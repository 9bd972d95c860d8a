import CCrypto

/// Comparisons whose running time does not depend on where two secrets differ.
package enum ConstantTime {
    /// Whether `a` and `b` hold the same bytes.
    ///
    /// Different lengths: false at once (lengths are public); equal lengths: CRYPTO_memcmp.
    /// libcrypto's comparison reads every byte of both whatever they hold, so the time taken
    /// says nothing about how long a common prefix is.
    package static func equals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        guard !a.isEmpty else { return true }
        return a.withUnsafeBytes { left in
            b.withUnsafeBytes { right in CRYPTO_memcmp(left.baseAddress, right.baseAddress, left.count) == 0 }
        }
    }
}
