/// The reverse proxies whose `X-Forwarded-For` the gateway believes, from `TRUSTED_PROXIES`:
/// a comma-separated list of IPv4 and IPv6 ranges or bare addresses.
///
/// ```
/// TRUSTED_PROXIES=10.0.0.0/8,127.0.0.1,::1
/// ```
///
/// With no trusted proxies, the client address is always the peer's; see
/// ``clientAddress(peer:forwardedFor:)``.
package struct TrustedProxies: Sendable {
    /// The trusted ranges.
    package let ranges: [CIDR]

    package init(ranges: [CIDR]) {
        self.ranges = ranges
    }

    /// No proxy is trusted.
    package static let none = TrustedProxies(ranges: [])

    /// Parses `TRUSTED_PROXIES`. Blanks around entries are ignored, and so are empty
    /// entries; an empty text trusts nothing.
    package static func parse(_ text: String) throws(TrustedProxiesError) -> TrustedProxies {
        var ranges: [CIDR] = []
        for (offset, piece) in text.split(separator: ",", omittingEmptySubsequences: false).enumerated() {
            let entry = piece.trimmingBlanks()
            guard !entry.isEmpty else { continue }
            guard let range = CIDR(entry) else { throw TrustedProxiesError(position: offset + 1) }
            ranges.append(range)
        }
        return TrustedProxies(ranges: ranges)
    }

    /// Whether `address` is in a trusted range.
    package func isTrusted(_ address: IPAddress) -> Bool {
        ranges.contains { $0.contains(address) }
    }
}

extension Substring {
    /// The text without leading and trailing spaces and tabs.
    fileprivate func trimmingBlanks() -> Substring {
        var text = self
        while let first = text.first, first == " " || first == "\t" { text.removeFirst() }
        while let last = text.last, last == " " || last == "\t" { text.removeLast() }
        return text
    }
}
