import EventLoop

/// An IPv4 or IPv6 address, held as 128 bits: an IPv4 address is stored as its
/// IPv4-mapped IPv6 form (`::ffff:a.b.c.d`), so `1.2.3.4` and `::ffff:1.2.3.4` are the same
/// address and both match an IPv4 range.
///
/// Parsed with `inet_pton`, after checking the text holds nothing but hex digits, `.` and
/// `:` (no zone id, no embedded NUL) and is at most 45 bytes long.
package struct IPAddress: Sendable, Hashable, CustomStringConvertible {
    /// The first 64 bits, network order as an integer.
    let high: UInt64
    /// The last 64 bits.
    let low: UInt64

    init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// The address written in `text` (`10.1.2.3`, `2001:db8::1`, `::ffff:10.1.2.3`), or `nil`.
    /// No brackets, port or blanks.
    package init?(_ text: some StringProtocol) {
        let utf8 = text.utf8
        guard !utf8.isEmpty, utf8.count <= 45,
            utf8.allSatisfy({ Self.isAddressByte($0) })
        else { return nil }
        guard let bytes = NumericAddress.bytes(of: String(text)) else { return nil }
        if bytes.count == 16 { self.init(bytes: bytes) } else { self.init(ipv4: bytes) }
    }

    /// The address from 16 bytes in network order.
    init(bytes: [UInt8]) {
        precondition(bytes.count == 16)
        var high: UInt64 = 0
        var low: UInt64 = 0
        for index in 0..<8 { high = high << 8 | UInt64(bytes[index]) }
        for index in 8..<16 { low = low << 8 | UInt64(bytes[index]) }
        self.init(high: high, low: low)
    }

    /// The IPv4 address from 4 bytes in network order.
    init(ipv4 bytes: [UInt8]) {
        precondition(bytes.count == 4)
        var value: UInt64 = 0xFFFF
        for byte in bytes { value = value << 8 | UInt64(byte) }
        self.init(high: 0, low: value)
    }

    /// Whether this is an IPv4 address (IPv4-mapped, `::ffff:0:0/96`).
    package var isIPv4: Bool {
        high == 0 && low >> 32 == 0xFFFF
    }

    /// The address with only its first `bits` bits (0–128, of the 128-bit form) kept and the
    /// rest zero: the first address of the range of that prefix.
    func keepingFirst(_ bits: Int) -> IPAddress {
        let (highMask, lowMask) = Self.masks(keepingFirst: bits)
        return IPAddress(high: high & highMask, low: low & lowMask)
    }

    /// The masks that keep the first `bits` bits (clamped to 0–128) of the high and low halves.
    static func masks(keepingFirst bits: Int) -> (high: UInt64, low: UInt64) {
        let bits = min(max(bits, 0), 128)
        // Smart shifts: a shift by 64 gives 0, as a mask of no bits needs.
        let high: UInt64 = bits >= 64 ? .max : UInt64.max << UInt64(64 - bits)
        let low: UInt64 = bits <= 64 ? 0 : UInt64.max << UInt64(128 - bits)
        return (high, low)
    }

    /// The 16 bytes in network order.
    var bytes: [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(16)
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: high >> UInt64(shift)))
        }
        for shift in stride(from: 56, through: 0, by: -8) {
            bytes.append(UInt8(truncatingIfNeeded: low >> UInt64(shift)))
        }
        return bytes
    }

    /// The canonical text: dotted quad for IPv4 (also when it was written mapped), the
    /// RFC 5952 form from `inet_ntop` for IPv6 (`2001:db8::1`). Equal addresses always give
    /// equal text, so it can key rate limits.
    package var description: String {
        if isIPv4 {
            return (0..<4).map { String(UInt8(truncatingIfNeeded: low >> UInt64(24 - 8 * $0))) }.joined(separator: ".")
        }
        return NumericAddress.ipv6Text(bytes) ?? "::"
    }

    private static func isAddressByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"),
            UInt8(ascii: "A")...UInt8(ascii: "F"), UInt8(ascii: "."), UInt8(ascii: ":"):
            true
        default:
            false
        }
    }
}
