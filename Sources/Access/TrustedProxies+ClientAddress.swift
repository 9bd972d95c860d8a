extension TrustedProxies {
    /// The most entries of an `X-Forwarded-For` header looked at, from the right.
    package static let maximumForwardedEntries = 32

    /// The address of the client behind the connection from `peer` (the connected socket's
    /// host), given the request's `X-Forwarded-For` value.
    ///
    /// When the peer is not a trusted proxy, the header is ignored and the peer is the
    /// client. When it is, the header is read from the right (each trusted proxy appends the
    /// address it saw): trusted addresses are skipped and the first untrusted one is the
    /// client; entries to its left were written by the client and are never believed. When
    /// every entry is trusted, the leftmost is the client; with no usable entry, the peer.
    ///
    /// Malformed entries are skipped (trusted proxies write well-formed ones, so they come
    /// from the untrusted part), and only the rightmost 32 entries are looked at. Entries may
    /// carry a port (`1.2.3.4:5678`, `[2001:db8::1]:443`). Addresses come back in canonical
    /// form (``IPAddress/description``: `::ffff:1.2.3.4` is `1.2.3.4`); a peer that is not
    /// an IP address comes back unchanged.
    package func clientAddress(peer: String, forwardedFor: String?) -> String {
        client(peer: peer, forwardedFor: forwardedFor)?.description ?? peer
    }

    /// The address ``clientAddress(peer:forwardedFor:)`` names, or nil when the peer is not
    /// an IP address.
    func client(peer: String, forwardedFor: String?) -> IPAddress? {
        guard let peerAddress = Self.forwardedAddress(peer.utf8) else { return nil }
        guard let forwardedFor, isTrusted(peerAddress) else { return peerAddress }

        // Bytes, not `Character`s: a comma must split entries even when the text before it
        // would make it part of a grapheme cluster.
        let header = forwardedFor.utf8
        var leftmostTrusted = peerAddress
        var end = header.endIndex
        for _ in 0..<Self.maximumForwardedEntries {
            let comma = header[..<end].lastIndex(of: UInt8(ascii: ","))
            let start = comma.map { header.index(after: $0) } ?? header.startIndex
            if let address = Self.forwardedAddress(header[start..<end]) {
                if !isTrusted(address) { return address }
                leftmostTrusted = address
            }
            guard let comma else { break }
            end = comma
        }
        return leftmostTrusted
    }

    /// The address in one `X-Forwarded-For` entry: blanks around it allowed, an IPv6
    /// address maybe in brackets, either maybe followed by `:port`. `nil` when malformed.
    static func forwardedAddress(_ entry: some Collection<UInt8>) -> IPAddress? {
        guard entry.count <= 80 else { return nil }
        var bytes = Array(entry)[...]
        let blanks: [UInt8] = [UInt8(ascii: " "), UInt8(ascii: "\t")]
        while let first = bytes.first, blanks.contains(first) { bytes.removeFirst() }
        while let last = bytes.last, blanks.contains(last) { bytes.removeLast() }
        guard !bytes.isEmpty else { return nil }
        let colon = UInt8(ascii: ":")

        if bytes.first == UInt8(ascii: "[") {
            guard let close = bytes.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            let rest = bytes[(close + 1)...]
            guard rest.isEmpty || isPort(rest) else { return nil }
            let inside = bytes[(bytes.startIndex + 1)..<close]
            guard inside.contains(colon) else { return nil }
            return IPAddress(String(decoding: inside, as: UTF8.self))
        }
        if bytes.count(where: { $0 == colon }) == 1, let index = bytes.firstIndex(of: colon) {
            // IPv4 with a port; an IPv6 address has at least two colons.
            guard isPort(bytes[index...]) else { return nil }
            return IPAddress(String(decoding: bytes[..<index], as: UTF8.self))
        }
        return IPAddress(String(decoding: bytes, as: UTF8.self))
    }

    /// Whether `bytes` is `:` and 1–5 digits.
    private static func isPort(_ bytes: ArraySlice<UInt8>) -> Bool {
        let digits = bytes.dropFirst()
        return bytes.first == UInt8(ascii: ":") && !digits.isEmpty && digits.count <= 5
            && digits.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }
}
