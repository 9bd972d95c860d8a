#if canImport(Glibc)
    import Glibc
#endif

/// Numeric IP addresses to and from their bytes, through libc's `inet_pton` and
/// `inet_ntop`, so that code above the event loop needs no C structures of its own.
package enum NumericAddress {
    /// The bytes of `text` in network order: 4 for an IPv4 dotted quad, 16 for IPv6 (any
    /// form `inet_pton` takes); nil for anything else.
    package static func bytes(of text: String) -> [UInt8]? {
        if text.utf8.contains(UInt8(ascii: ":")) {
            var address = in6_addr()
            guard inet_pton(AF_INET6, text, &address) == 1 else { return nil }
            return withUnsafeBytes(of: address) { Array($0) }
        }
        var address = in_addr()
        guard inet_pton(AF_INET, text, &address) == 1 else { return nil }
        // `s_addr` is in network order: its bytes in memory are a, b, c, d.
        return withUnsafeBytes(of: address.s_addr) { Array($0) }
    }

    /// The RFC 5952 text of 16 IPv6 bytes in network order (`2001:db8::1`).
    package static func ipv6Text(_ bytes: [UInt8]) -> String? {
        guard bytes.count == 16 else { return nil }
        var address = in6_addr()
        withUnsafeMutableBytes(of: &address) { raw in
            for index in 0..<16 { raw[index] = bytes[index] }
        }
        var buffer = [CChar](repeating: 0, count: 64)
        guard inet_ntop(AF_INET6, &address, &buffer, socklen_t(buffer.count)) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
