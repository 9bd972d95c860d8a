#if canImport(Glibc)
import Glibc
#endif
import EventLoop


/// A `redis-server` of a test's own on 127.0.0.1, with no persistence, stopped by its pid.
public final class RedisServer {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        public init(description: String) { self.description = description }
    }

    public let port: Int
    private let extraArguments: [String]
    private var pid: pid_t?

    /// Starts a server on `port` (a free one when nil) and waits until it accepts connections.
    public init(port: Int? = nil, arguments: [String] = []) async throws {
        self.port = try port ?? Self.freePort()
        extraArguments = arguments
        try await start()
    }

    deinit { kill() }

    /// (Re)starts the server on the same port.
    public func start() async throws {
        precondition(pid == nil, "already running")
        let words = ["redis-server", "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"] + extraArguments
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        let argv = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var child: pid_t = 0
        let rc = posix_spawnp(&child, "redis-server", &actions, &attributes, argv, environ)
        guard rc == 0 else { throw Failure(description: "posix_spawn redis-server failed: \(rc)") }
        pid = child
        let port = self.port
        guard await eventually(within: 10, { Self.accepts(port: port) }) else {
            kill()
            throw Failure(description: "redis-server did not listen on \(port)")
        }
    }

    /// SIGKILL, and waits for it to be gone.
    public func kill() {
        guard let pid else { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        self.pid = nil
    }

    /// Sends `number` to the server (SIGSTOP: a server that hangs; SIGCONT: back).
    public func signal(_ number: Int32) {
        if let pid { Glibc.kill(pid, number) }
    }

    public var url: String { "redis://127.0.0.1:\(port)" }

    /// A port the kernel just handed out and released (another process could take it first;
    /// good enough on a test machine).
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw Failure(description: "socket failed") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
        }
        guard bound == 0 else { throw Failure(description: "bind failed") }
        let named = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        guard named == 0 else { throw Failure(description: "getsockname failed") }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    public static func accepts(port: Int) -> Bool {
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
