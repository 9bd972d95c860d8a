#if canImport(Glibc)
    import Glibc
#endif

/// Text from UTF-8 bytes that must be valid: the same verdict as
/// `String(validating:as: UTF8.self)` at a fraction of its cost on the hot paths (that
/// initializer is generic and looks up type metadata on every call).
package enum UTF8Text {
    /// The string of `bytes`, or nil when they are not valid UTF-8 (overlong forms, surrogates,
    /// scalars above U+10FFFF, stray or missing continuation bytes).
    ///
    /// `String(decoding:as:)` validates as it copies and replaces each ill-formed sequence with
    /// U+FFFD (EF BF BD). A replacement always changes the bytes at that place (the ill-formed
    /// sequence cannot itself be EF BF BD, which is well-formed), so the bytes are valid exactly
    /// when the string's UTF-8 equals them.
    package static func string(_ bytes: UnsafeBufferPointer<UInt8>) -> String? {
        let text = String(decoding: bytes, as: UTF8.self)
        let unchanged =
            text.utf8.withContiguousStorageIfAvailable { decoded in
                guard decoded.count == bytes.count else { return false }
                // both empty
                guard let decodedStart = decoded.baseAddress, let start = bytes.baseAddress else { return true }
                return memcmp(decodedStart, start, bytes.count) == 0
            } ?? text.utf8.elementsEqual(bytes)
        return unchanged ? text : nil
    }

    /// Whether `bytes` are valid UTF-8: plain ASCII is answered eight bytes at a time, anything
    /// else by ``string(_:)``.
    package static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        if let base = bytes.baseAddress {
            while index + 8 <= bytes.count,
                UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0
            {
                index += 8
            }
        }
        while index < bytes.count, bytes[index] < 0x80 { index += 1 }
        return index == bytes.count || string(bytes) != nil
    }
}
