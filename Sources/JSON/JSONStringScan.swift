/// Finds the next byte of a JSON string's text that needs attention — a quote, a backslash,
/// a control character, and for the writer also DEL — eight bytes at a time.
///
/// The word tests are the classic "has a zero byte" bit tricks: `(x − 0x01…) & ~x & 0x80…` is
/// non-zero exactly when some byte of `x` is zero, and with `0x20` in place of `0x01` exactly
/// when some byte is below 0x20. A word that tests non-zero holds a byte we stop at, so the
/// byte-by-byte loop that follows finds it within eight bytes.
package enum JSONStringScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The index of the first byte at or after `start` that is `"`, `\`, below 0x20, or (when
    /// `delete` is set) 0x7F; `bytes.count` when there is none.
    @inline(__always)
    package static func firstSpecial(in bytes: UnsafeBufferPointer<UInt8>, from start: Int, delete: Bool) -> Int {
        var index = start
        if let base = bytes.baseAddress {
            while index + 8 <= bytes.count {
                let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                var found = hasByte(word, 0x22) | hasByte(word, 0x5C) | hasByteBelow0x20(word)
                if delete { found |= hasByte(word, 0x7F) }
                if found != 0 { break }
                index += 8
            }
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte == 0x22 || byte == 0x5C || byte < 0x20 || (delete && byte == 0x7F) { return index }
            index += 1
        }
        return index
    }

    @inline(__always)
    private static func hasByte(_ word: UInt64, _ byte: UInt8) -> UInt64 {
        let masked = word ^ (ones &* UInt64(byte))
        return (masked &- ones) & ~masked & highBits
    }

    @inline(__always)
    private static func hasByteBelow0x20(_ word: UInt64) -> UInt64 {
        (word &- ones &* 0x20) & ~word & highBits
    }
}
