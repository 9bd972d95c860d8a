#if canImport(Glibc)
    import Glibc
#endif

/// Looks a host name up with `getaddrinfo`, which blocks: called on a thread of its own,
/// never on a loop, so that libpq is handed a numeric address and looks nothing up itself.
enum HostResolver {
    /// The TCP addresses of `host` as text (`127.0.0.1`, `::1`), in the resolver's order,
    /// without repeats and at most `limit`; empty when it has none.
    static func addresses(of host: String, port: Int, limit: Int = 8) -> [String] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        guard getaddrinfo(host, String(port), &hints, &list) == 0, let list else { return [] }
        defer { freeaddrinfo(list) }
        var found: [String] = []
        var entry: UnsafeMutablePointer<addrinfo>? = list
        while let current = entry, found.count < limit {
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            let family = current.pointee.ai_family
            if let address = current.pointee.ai_addr {
                var text: String?
                if family == AF_INET {
                    address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { pointer in
                        var raw = pointer.pointee.sin_addr
                        if inet_ntop(AF_INET, &raw, &buffer, socklen_t(buffer.count)) != nil {
                            text = String(
                                decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                        }
                    }
                } else if family == AF_INET6 {
                    address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { pointer in
                        var raw = pointer.pointee.sin6_addr
                        if inet_ntop(AF_INET6, &raw, &buffer, socklen_t(buffer.count)) != nil {
                            text = String(
                                decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                        }
                    }
                }
                if let text, !found.contains(text) { found.append(text) }
            }
            entry = current.pointee.ai_next
        }
        return found
    }
}
