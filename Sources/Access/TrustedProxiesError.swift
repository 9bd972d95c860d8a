/// Why `TRUSTED_PROXIES` could not be parsed: the 1-based position of the comma-separated
/// entry that is not an IPv4 or IPv6 address or range.
package struct TrustedProxiesError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The 1-based position of the entry (empty pieces counted).
    package let position: Int

    package init(position: Int) {
        self.position = position
    }

    /// `entry 2: not an IP address or CIDR range (such as 10.0.0.0/8 or ::1/128)`.
    package var description: String {
        "entry \(position): not an IP address or CIDR range (such as 10.0.0.0/8 or ::1/128)"
    }
}
