import EventLoop
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A `redis-server` of a test's own on 127.0.0.1, with no persistence, stopped by its pid.
package final class RedisServer {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
        package init(description: String) { self.description = description }
    }

    package let port: Int
    private let extraArguments: [String]
    private var pid: pid_t?

    /// Starts a server on `port` (a free one when nil) and waits until it accepts connections.
    package init(port: Int? = nil, arguments: [String] = []) async throws {
        self.port = try port ?? LoopbackPort.free()
        extraArguments = arguments
        try await start()
    }

    deinit { kill() }

    /// (Re)starts the server on the same port.
    package func start() async throws {
        precondition(pid == nil, "already running")
        let words =
            ["redis-server", "--port", "\(port)", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
            + extraArguments
        let child = try spawnChild(words, searchPath: true)
        pid = child
        let port = self.port
        guard
            await eventually(
                "redis-server listens on \(port)", onTimeout: .returnsFalse, { LoopbackPort.accepts(port) })
        else {
            kill()
            throw Failure(description: "redis-server did not listen on \(port)")
        }
    }

    /// SIGKILL, and waits for it to be gone.
    package func kill() {
        guard let pid else { return }
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        self.pid = nil
    }

    /// Sends `number` to the server (SIGSTOP: a server that hangs; SIGCONT: back).
    package func signal(_ number: Int32) {
        if let pid { Glibc.kill(pid, number) }
    }

    package var url: String { "redis://127.0.0.1:\(port)" }
}
