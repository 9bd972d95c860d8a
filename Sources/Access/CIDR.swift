/// A range of IP addresses: `10.0.0.0/8`, `127.0.0.1/32`, `::1/128`, `fd00::/8`. A bare
/// address is the range of that one address (`/32` or `/128`).
///
/// An IPv4 range also contains the IPv4-mapped forms of its addresses (`::ffff:10.1.2.3` is
/// in `10.0.0.0/8`): both are held as 128 bits (see ``IPAddress``). Host bits after the
/// prefix are ignored (`10.1.2.3/8` is `10.0.0.0/8`).
package struct CIDR: Sendable, Hashable, CustomStringConvertible {
    /// The first address of the range.
    package let network: IPAddress
    /// The prefix length as written: 0–32 for IPv4, 0–128 for IPv6.
    package let prefixLength: Int
    /// Whether the range was written as IPv4.
    package let isIPv4: Bool

    private let highMask: UInt64
    private let lowMask: UInt64

    /// The range written in `text`, or `nil` when it is not one.
    package init?(_ text: some StringProtocol) {
        let parts = text.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 1 || parts.count == 2 else { return nil }
        guard let address = IPAddress(parts[0]) else { return nil }
        let writtenAsIPv4 = !parts[0].contains(":")
        let maximum = writtenAsIPv4 ? 32 : 128
        let prefix: Int
        if parts.count == 2 {
            let digits = parts[1].utf8
            guard !digits.isEmpty, digits.count <= 3,
                digits.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                let value = Int(parts[1]), value <= maximum
            else { return nil }
            prefix = value
        } else {
            prefix = maximum
        }
        let bits = writtenAsIPv4 ? 96 + prefix : prefix
        let (highMask, lowMask) = IPAddress.masks(keepingFirst: bits)
        self.network = IPAddress(high: address.high & highMask, low: address.low & lowMask)
        self.prefixLength = prefix
        self.isIPv4 = writtenAsIPv4
        self.highMask = highMask
        self.lowMask = lowMask
    }

    /// Whether `address` is in the range.
    package func contains(_ address: IPAddress) -> Bool {
        address.high & highMask == network.high && address.low & lowMask == network.low
    }

    /// `10.0.0.0/8`, `::1/128`.
    package var description: String { "\(network)/\(prefixLength)" }
}
