#if canImport(Glibc)
    import Glibc
#endif

/// Loopback ports for servers the tests start themselves (redis-server, Postgres).
package enum LoopbackPort {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    /// A loopback port free now, in 10000-20999, below the kernel's ephemeral range
    /// (`ip_local_port_range`, from 32768 by default): no `bind` to port 0 and no outgoing
    /// `connect` on the machine is ever handed one, so it stays free until the caller binds
    /// it — however many connections the other tests, CI lanes and servers make meanwhile. (A
    /// port the kernel hands out for `bind(0)` is in that range, and the next `connect`
    /// anywhere may take it once released.) The scripts' `free_port` takes 21000-32767.
    package static func free() throws -> Int {
        guard ephemeralRangeStart() > 21_000 else { return try kernelAssigned() }
        for _ in 0..<1000 {
            let port = Int.random(in: 10_000..<21_000)
            if isBindable(port) { return port }
        }
        throw Failure(description: "no free port in 10000-20999")
    }

    /// The first port of the kernel's ephemeral range; 32768 (its default) when unreadable.
    static func ephemeralRangeStart() -> Int {
        guard let file = fopen("/proc/sys/net/ipv4/ip_local_port_range", "r") else { return 32_768 }
        defer { fclose(file) }
        var low: Int32 = 0
        var high: Int32 = 0
        return withUnsafeMutablePointer(to: &low) { lowPointer in
            withUnsafeMutablePointer(to: &high) { highPointer in
                withVaList([lowPointer, highPointer]) { vfscanf(file, "%d %d", $0) }
            }
        } == 2 ? Int(low) : 32_768
    }

    /// Whether 127.0.0.1:`port` can be bound now.
    static func isBindable(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        } == 0
    }

    /// A port the kernel hands out for `bind(0)`, released at once.
    static func kernelAssigned() throws -> Int {
        let (fd, port) = try boundToKernelPort()
        close(fd)
        return port
    }

    /// A socket bound to a loopback port the kernel chose, and that port; the caller closes it.
    static func boundToKernelPort() throws -> (descriptor: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw Failure(description: "bind failed")
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }

    /// A loopback port that refuses connections for as long as the value lives: bound and
    /// never listened on, so no other server of the run (a mock on port 0) can be given it,
    /// as it could a port from ``free()``. For an upstream that is down.
    package final class Refusing: Sendable {
        package let port: Int
        private let descriptor: Int32

        package init() throws {
            (descriptor, port) = try LoopbackPort.boundToKernelPort()
        }

        deinit { close(descriptor) }
    }

    /// Whether something accepts connections on 127.0.0.1:`port` now.
    package static func accepts(_ port: Int) -> Bool {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let length = socklen_t(MemoryLayout<sockaddr_in>.size)
        return withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, length) }
        } == 0
    }
}
