#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// An IPv4 or IPv6 socket address.
public enum SocketAddress: Hashable, Sendable, CustomStringConvertible {
    case v4(host: String, port: Int)
    case v6(host: String, port: Int)

    /// The port number.
    public var port: Int {
        switch self {
        case .v4(_, let port), .v6(_, let port): return port
        }
    }

    /// The numeric host, without brackets.
    public var host: String {
        switch self {
        case .v4(let host, _), .v6(let host, _): return host
        }
    }

    public var description: String {
        switch self {
        case .v4(let host, let port): return "\(host):\(port)"
        case .v6(let host, let port): return "[\(host)]:\(port)"
        }
    }

    /// Reads a `sockaddr_storage` filled in by the kernel.
    init?(storage: sockaddr_storage) {
        var storage = storage
        switch Int32(storage.ss_family) {
        case AF_INET:
            let sin = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in.self) }
            var addr = sin.sin_addr
            var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            guard inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            self = .v4(
                host: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                port: Int(UInt16(bigEndian: sin.sin_port)))
        case AF_INET6:
            let sin6 = withUnsafeBytes(of: &storage) { $0.load(as: sockaddr_in6.self) }
            var addr = sin6.sin6_addr
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
            guard inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
            self = .v6(
                host: String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                port: Int(UInt16(bigEndian: sin6.sin6_port)))
        default:
            return nil
        }
    }

    /// Resolves `host` (a numeric address or a name such as `localhost`) for a passive
    /// (listening) socket on `port`. An empty host means every IPv6 and IPv4 address.
    public static func resolve(host: String, port: Int) throws(SocketAddressError) -> [ResolvedAddress] {
        guard (0...65535).contains(port) else { throw SocketAddressError(message: "port \(port) is out of range") }
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        var result: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host.isEmpty ? nil : host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            let detail = status == 0 ? "no address" : String(cString: gai_strerror(status))
            throw SocketAddressError(message: "cannot resolve host '\(host)': \(detail)")
        }
        defer { freeaddrinfo(first) }
        var addresses: [ResolvedAddress] = []
        var cursor: UnsafeMutablePointer<addrinfo>? = first
        while let info = cursor {
            if let sockaddr = info.pointee.ai_addr, info.pointee.ai_addrlen <= MemoryLayout<sockaddr_storage>.size {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { dest in
                    dest.copyMemory(from: UnsafeRawBufferPointer(start: sockaddr, count: Int(info.pointee.ai_addrlen)))
                }
                if let address = SocketAddress(storage: storage) {
                    addresses.append(
                        ResolvedAddress(address: address, storage: storage, length: info.pointee.ai_addrlen))
                }
            }
            cursor = info.pointee.ai_next
        }
        if addresses.isEmpty { throw SocketAddressError(message: "cannot resolve host '\(host)': no usable address") }
        return addresses
    }
}

/// A resolved address together with its kernel representation.
public struct ResolvedAddress: Sendable {
    public let address: SocketAddress
    let storage: sockaddr_storage
    let length: socklen_t
}

/// A host or port that cannot be turned into a socket address.
public struct SocketAddressError: Error, Hashable, Sendable, CustomStringConvertible {
    public let message: String
    public var description: String { message }
}
