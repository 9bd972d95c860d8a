#if canImport(Glibc)
    import CEventLoop
    import Glibc
#endif

/// Thin, typed wrappers over the socket calls the servers and clients use. Every call goes
/// through ``syscall(blocking:_:_:)``; the file descriptors are plain `CInt`s owned by the caller.
package enum Socket {
    /// Creates a non-blocking listening socket bound to `address`.
    ///
    /// IPv6 wildcard sockets accept IPv4 too (`IPV6_V6ONLY` off). `SO_REUSEADDR` is set so a
    /// restart does not wait for `TIME_WAIT`.
    package static func listen(on resolved: ResolvedAddress, backlog: Int32) throws(IOError) -> CInt {
        let family: CInt
        switch resolved.address {
        case .v4: family = AF_INET
        case .v6: family = AF_INET6
        }
        let fd = try syscall("socket") {
            socket(
                family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        }
        do {
            try setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            if family == AF_INET6 { try setOption(fd, CInt(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
            var storage = resolved.storage
            // The address in the error: "address already in use" alone does not say which.
            _ = try syscall("bind \(resolved.address)") {
                withUnsafePointer(to: &storage) {
                    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, resolved.length) }
                }
            }
            _ = try syscall("listen \(resolved.address)") { Glibc.listen(fd, backlog) }
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
        return fd
    }

    /// The address a socket is bound to.
    package static func localAddress(_ fd: CInt) throws(IOError) -> SocketAddress {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        _ = try syscall("getsockname") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        guard let address = SocketAddress(storage: storage) else {
            throw IOError(errnoCode: EAFNOSUPPORT, reason: "getsockname")
        }
        return address
    }

    /// Accepts one pending connection as a non-blocking socket, or `.wouldBlock`.
    package static func accept(_ listener: CInt) throws(IOError) -> IOResult<(fd: CInt, peer: SocketAddress?)> {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let result = try syscall(blocking: false, "accept4") {
            withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    CEventLoop_accept4(listener, $0, &length)
                }
            }
        }
        switch result {
        case .wouldBlock: return .wouldBlock
        case .processed(let fd): return .processed((fd, SocketAddress(storage: storage)))
        }
    }

    /// Reads into `buffer`; `.processed(0)` is end of stream.
    @inline(__always)
    package static func read(_ fd: CInt, into buffer: UnsafeMutableRawBufferPointer) throws(IOError) -> IOResult<Int> {
        try syscall(blocking: false, "read") { Glibc.read(fd, buffer.baseAddress, buffer.count) }
    }

    /// Whether the peer has sent bytes not yet read: a look that neither waits nor takes them.
    /// False at end of stream, on an error, and when nothing has come.
    package static func hasInput(_ fd: CInt) -> Bool {
        var byte: UInt8 = 0
        return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
    }

    /// Writes as much of `bytes` as the socket takes, without raising `SIGPIPE`.
    @inline(__always)
    package static func write(_ fd: CInt, _ bytes: UnsafeRawBufferPointer) throws(IOError) -> IOResult<Int> {
        try syscall(blocking: false, "send") { send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL)) }
    }

    /// Sets an integer socket option.
    package static func setOption(_ fd: CInt, _ level: CInt, _ name: CInt, _ value: CInt) throws(IOError) {
        var value = value
        _ = try syscall("setsockopt") { setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<CInt>.size)) }
    }

    /// Disables Nagle's algorithm, so small responses leave at once.
    package static func setNoDelay(_ fd: CInt) {
        _ = try? setOption(fd, CInt(IPPROTO_TCP), TCP_NODELAY, 1)
    }

    /// Half-closes the sending side: the peer reads end of stream after what was sent.
    package static func shutdownWrite(_ fd: CInt) {
        _ = Glibc.shutdown(fd, Int32(SHUT_WR))
    }

    /// Closes `fd`. `close` must not be retried on `EINTR` on Linux, so it is called once.
    package static func close(_ fd: CInt) {
        _ = Glibc.close(fd)
    }

    /// Closes `fd` at once with a reset instead of a FIN (`SO_LINGER` 0), dropping unread input.
    package static func abort(_ fd: CInt) {
        var value = linger(l_onoff: 1, l_linger: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_LINGER, &value, socklen_t(MemoryLayout<linger>.size))
        _ = Glibc.close(fd)
    }

    /// Raises the soft open-file limit to the hard limit; returns the new soft limit.
    @discardableResult
    package static func raiseOpenFileLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            limit.rlim_cur = limit.rlim_max
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(limit.rlim_cur)
    }
}
