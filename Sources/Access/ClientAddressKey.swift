/// Who a client is for everything the gateway counts or keeps per address (a guest's limits
/// and quota, App Attest's per-address limit, a guest's idempotency keys and jobs): its
/// address as ``TrustedProxies`` finds it, an IPv6 address cut to its network prefix
/// (`IPV6_CLIENT_PREFIX`, 64 by default). An IPv4 address is kept whole.
///
/// One IPv6 host is given a whole /64 and may take a new address in it at will (privacy
/// addresses, RFC 8981): keyed by the full address, it would be a fresh guest at each one.
package struct ClientAddressKey: Sendable {
    /// `IPV6_CLIENT_PREFIX` when unset: the subnet one host is given.
    package static let defaultIPv6PrefixLength = 64
    /// The prefix lengths `IPV6_CLIENT_PREFIX` may name: shorter than /32 would make a whole
    /// provider one client.
    package static let ipv6PrefixLengths = 32...128

    /// The proxies whose `X-Forwarded-For` names the client.
    package let trustedProxies: TrustedProxies
    /// The bits of an IPv6 address that name its client.
    package let ipv6PrefixLength: Int

    /// Keys behind `trustedProxies`, an IPv6 client by its first `ipv6PrefixLength` bits
    /// (held within ``ipv6PrefixLengths``).
    package init(trustedProxies: TrustedProxies = .none, ipv6PrefixLength: Int = Self.defaultIPv6PrefixLength) {
        self.trustedProxies = trustedProxies
        self.ipv6PrefixLength = min(
            max(ipv6PrefixLength, Self.ipv6PrefixLengths.lowerBound), Self.ipv6PrefixLengths.upperBound)
    }

    /// The key of `address`: an IPv4 address as itself (`203.0.113.7`), an IPv6 address as
    /// its network and prefix length (`2001:db8:1:2::/64`; with 128, the address alone).
    package func key(_ address: IPAddress) -> String {
        guard !address.isIPv4, ipv6PrefixLength < 128 else { return address.description }
        return "\(address.keepingFirst(ipv6PrefixLength))/\(ipv6PrefixLength)"
    }

    /// The key of the client behind the connection from `peer` (the socket's host), given the
    /// request's `X-Forwarded-For` value (``TrustedProxies/clientAddress(peer:forwardedFor:)``).
    /// A peer that is not an IP address is its own key.
    package func key(peer: String, forwardedFor: String?) -> String {
        trustedProxies.client(peer: peer, forwardedFor: forwardedFor).map(key) ?? peer
    }
}
