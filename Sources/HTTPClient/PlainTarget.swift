#if canImport(Glibc)
    import Glibc
#endif

/// Where a plain `http://` URL points, split once: the connection pool's key, the address to
/// connect to, the `Host` field and the request target.
///
/// Only the URLs the client's own connections carry are split here: `http://host[:port]/...`
/// with a name, an IPv4 address or a bracketed IPv6 address. One with user information
/// (`user:pass@`), a byte outside printable ASCII, or anything else unusual goes to curl,
/// which has always taken it.
struct PlainTarget: Sendable {
    /// `host:port`, the key idle connections are kept by.
    let key: String
    /// The host as written, without brackets.
    let host: String
    let port: Int
    /// The `Host` field's value: the host (bracketed for IPv6), with `:port` unless 80.
    let hostField: String
    /// The path and query (`/v1/chat/completions`), `/` when the URL has none.
    let target: String

    init?(url: String) {
        guard CurlMulti.isSecure(url) == false else { return nil }
        var url = url
        guard let parts = url.withUTF8({ Self.split($0) }) else { return nil }
        let (host, port, bracketed, target) = parts
        guard (1...65535).contains(port) else { return nil }
        self.host = host
        self.port = port
        let shown = bracketed ? "[" + host + "]" : host
        key = shown + ":" + String(port)
        hostField = port == 80 ? shown : key
        self.target = target
    }

    /// Whether the client's own connections may carry `url`: an `http://` URL this type splits.
    static func takes(_ url: String) -> Bool {
        PlainTarget(url: url) != nil
    }

    private static func split(_ bytes: UnsafeBufferPointer<UInt8>) -> (String, Int, Bool, String)? {
        // "http://", in any case
        guard bytes.count > 7 else { return nil }
        for byte in bytes where byte <= 0x20 || byte >= 0x7F { return nil }
        var index = 7
        let authorityStart = index
        while index < bytes.count, bytes[index] != UInt8(ascii: "/"), bytes[index] != UInt8(ascii: "?"),
            bytes[index] != UInt8(ascii: "#")
        {
            if bytes[index] == UInt8(ascii: "@") { return nil }
            index += 1
        }
        let authority = UnsafeBufferPointer(rebasing: bytes[authorityStart..<index])
        var rest = UnsafeBufferPointer(rebasing: bytes[index...])
        if let hash = rest.firstIndex(of: UInt8(ascii: "#")) { rest = UnsafeBufferPointer(rebasing: rest[..<hash]) }
        var target = String(decoding: rest, as: UTF8.self)
        if target.isEmpty { target = "/" } else if target.utf8.first == UInt8(ascii: "?") { target = "/" + target }

        let hostPart: UnsafeBufferPointer<UInt8>
        var portPart: UnsafeBufferPointer<UInt8>?
        var bracketed = false
        if authority.first == UInt8(ascii: "[") {
            guard let close = authority.firstIndex(of: UInt8(ascii: "]")) else { return nil }
            hostPart = UnsafeBufferPointer(rebasing: authority[1..<close])
            let after = close + 1
            if after < authority.count {
                guard authority[after] == UInt8(ascii: ":") else { return nil }
                portPart = UnsafeBufferPointer(rebasing: authority[(after + 1)...])
            }
            bracketed = true
        } else if let colon = authority.firstIndex(of: UInt8(ascii: ":")) {
            hostPart = UnsafeBufferPointer(rebasing: authority[..<colon])
            portPart = UnsafeBufferPointer(rebasing: authority[(colon + 1)...])
        } else {
            hostPart = authority
        }
        guard !hostPart.isEmpty else { return nil }
        for byte in hostPart {
            let allowed =
                (byte >= 0x30 && byte <= 0x39) || (byte | 0x20 >= 0x61 && byte | 0x20 <= 0x7A)
                || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_")
                || (bracketed && (byte == UInt8(ascii: ":") || byte == UInt8(ascii: "%")))
            guard allowed else { return nil }
        }
        var port = 80
        if let portPart {
            guard !portPart.isEmpty, portPart.count <= 5 else { return nil }
            port = 0
            for byte in portPart {
                let digit = byte &- 0x30
                guard digit < 10 else { return nil }
                port = port * 10 + Int(digit)
            }
        }
        return (String(decoding: hostPart, as: UTF8.self), port, bracketed, target)
    }
}

/// An address to connect to, as `connect` takes it.
struct PeerAddress: @unchecked Sendable {
    var storage = sockaddr_storage()
    var length: socklen_t = 0
    var family: CInt { CInt(storage.ss_family) }

    /// A numeric IPv4 or IPv6 host; nil for a name.
    init?(numeric host: String, port: Int) {
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_port = in_port_t(UInt16(port).bigEndian)
            address.sin_addr = v4
            self.init(address)
        } else if inet_pton(AF_INET6, host, &v6) == 1 {
            var address = sockaddr_in6()
            address.sin6_family = sa_family_t(AF_INET6)
            address.sin6_port = in_port_t(UInt16(port).bigEndian)
            address.sin6_addr = v6
            self.init(address)
        } else {
            return nil
        }
    }

    private init<Address>(_ address: Address) {
        withUnsafeMutableBytes(of: &storage) { storage in
            withUnsafeBytes(of: address) { storage.copyMemory(from: $0) }
        }
        length = socklen_t(MemoryLayout<Address>.size)
    }

    init(_ info: UnsafePointer<addrinfo>) {
        let count = min(Int(info.pointee.ai_addrlen), MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutableBytes(of: &storage) { storage in
            storage.copyMemory(from: UnsafeRawBufferPointer(start: info.pointee.ai_addr, count: count))
        }
        length = socklen_t(count)
    }

    /// The addresses of `host` for a TCP connection to `port`, through the system's resolver
    /// (which may block: called off the loops). `localhost` is the loopback addresses, as curl
    /// takes it, without asking.
    static func resolve(_ host: String, port: Int) -> [PeerAddress] {
        if let numeric = PeerAddress(numeric: host, port: port) { return [numeric] }
        if host.lowercased() == "localhost" || host.lowercased().hasSuffix(".localhost") {
            return [PeerAddress(numeric: "127.0.0.1", port: port), PeerAddress(numeric: "::1", port: port)]
                .compactMap { $0 }
        }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_ADDRCONFIG | AI_NUMERICSERV
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0 else { return [] }
        defer { freeaddrinfo(list) }
        var addresses: [PeerAddress] = []
        var entry = list
        while let info = entry {
            if info.pointee.ai_family == AF_INET || info.pointee.ai_family == AF_INET6 {
                addresses.append(PeerAddress(info))
            }
            entry = info.pointee.ai_next
        }
        // IPv4 first: a name with both usually serves both, and an IPv6 route that
        // silently drops would cost the whole connect timeout before the IPv4 try.
        return addresses.filter { $0.family == AF_INET } + addresses.filter { $0.family == AF_INET6 }
    }
}
