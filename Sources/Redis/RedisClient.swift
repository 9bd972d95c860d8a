package import EventLoop
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A Redis client on the loops of an ``EventLoopGroup``: one ``RedisConnection`` per loop,
/// each living on its loop, so a command sent from a task on a loop stays on that loop and
/// takes no lock. Commands on one connection are pipelined; each waits at most
/// ``RedisConfiguration/timeout`` for its reply.
///
/// Built for one round trip per decision: ``evalSHA(_:keys:arguments:writeNow:)`` runs a script
/// loaded at connect time (a rate limiter's atomic check-and-count), and every failure —
/// Redis down, a timeout, a server error — is a ``RedisError`` the caller can map to its
/// failure mode. A connection that is down fails commands at once and keeps reconnecting
/// in the background.
///
/// Cancelling the calling task answers it with `.cancelled` at once; the command already
/// sent still has its reply read (and dropped), so the other commands are not disturbed.
package final class RedisClient: Service {
    package let name: String
    /// The settings the client was made with.
    package let configuration: RedisConfiguration
    private let connections: [LoopBound<RedisConnection>]
    private let status = RedisStatus()
    private let cursor = Atomic<Int>(0)

    /// hiredis writes with plain `write(2)`: a write to a connection Redis reset must not kill
    /// the process with SIGPIPE (the error comes back as EPIPE and closes the connection).
    private static let ignoreBrokenPipes: Void = { _ = signal(SIGPIPE, SIG_IGN) }()

    /// Creates a client with one connection on each of `group`'s loops; nothing connects
    /// before ``start()``. `scripts` are loaded at every connect.
    package init(
        configuration: RedisConfiguration, group: EventLoopGroup, scripts: [RedisScript] = [], name: String = "redis"
    ) {
        _ = Self.ignoreBrokenPipes
        self.configuration = configuration
        self.name = name
        let status = self.status
        connections = group.loops.map { loop in
            LoopBound(
                handingOver: RedisConnection(
                    loop: loop, configuration: configuration, scripts: scripts, status: status),
                to: loop
            )
        }
    }

    /// True while every loop's connection is up (for a metric and the failure mode's log).
    package var isUp: Bool { status.connectedCount == connections.count }

    /// How many of the loops' connections are up now.
    package var connectedCount: Int { status.connectedCount }

    /// Connects every loop's connection and returns once each first attempt has succeeded or
    /// failed (bounded by the connect timeout). Does not throw when Redis is down: the
    /// connections keep trying in the background.
    package func start() async throws {
        await withTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        connection.withValue { $0.start { continuation.resume() } }
                    }
                }
            }
        }
    }

    /// Stops taking commands, lets those pending finish until `deadline`, then closes
    /// every connection; commands still pending then fail with `.shutdown`.
    package func stop(deadline: MonotonicInstant) async {
        for connection in connections {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                connection.withValue { $0.stop(deadline: deadline) { continuation.resume() } }
            }
        }
    }

    /// Sends one command (`["SET", "key", "value"]`) and returns its reply. A server error
    /// reply throws ``RedisError`` with code `.server` and the server's message.
    package func send(_ arguments: [RedisArgument]) async throws(RedisError) -> RedisValue {
        guard !arguments.isEmpty else { throw RedisError(.protocol, "empty command") }
        return try await perform { connection, call in connection.send(arguments, call: call) }
    }

    /// ``send(_:)`` with the arguments written out: `send("GET", "key")`.
    package func send(_ arguments: RedisArgument...) async throws(RedisError) -> RedisValue {
        try await send(arguments)
    }

    /// Runs `script` by its SHA (`EVALSHA sha numkeys keys… arguments…`). The script is
    /// loaded on each connection at connect (or at first use when not given to `init`);
    /// when the server answers `NOSCRIPT`, it is loaded again and run once more (each of those
    /// commands bounded by the timeout).
    /// With `writeNow`, the command is written to the socket before this call first waits
    /// (when it runs on one of the client's loops), not after the loop's turn.
    package func evalSHA(
        _ script: RedisScript, keys: [RedisArgument] = [], arguments: [RedisArgument] = [], writeNow: Bool = false
    ) async throws(RedisError) -> RedisValue {
        try await perform { connection, call in
            connection.evalSHA(script, keys: keys, arguments: arguments, call: call)
            if writeNow { connection.writeNow() }
        }
    }

    private func perform(_ start: @escaping @Sendable (RedisConnection, RedisCall) -> Void) async throws(RedisError)
        -> RedisValue
    {
        let connection = pickConnection()
        guard !Task.isCancelled else { throw RedisError(.cancelled) }
        let call = LoopBound(handingOver: RedisCall(), to: connection.loop)
        let result = await withTaskCancellationHandler {
            await withCheckedContinuation {
                (continuation: CheckedContinuation<Result<RedisValue, RedisError>, Never>) in
                connection.withValue { connection in
                    let call = call.value
                    guard call.attach(continuation) else { return }
                    start(connection, call)
                }
            }
        } onCancel: {
            call.withValue { $0.cancel() }
        }
        return try result.get()
    }

    /// Commands waiting for their replies on every connection (for tests).
    func pendingCount() async -> Int {
        var total = 0
        for connection in connections {
            total += await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
                connection.withValue { continuation.resume(returning: $0.pendingCount) }
            }
        }
        return total
    }

    /// The calling loop's connection when called on one, otherwise the next in turn.
    private func pickConnection() -> LoopBound<RedisConnection> {
        if connections.count == 1 { return connections[0] }
        for connection in connections where connection.loop.inEventLoop { return connection }
        return connections[cursor.add(1, ordering: .relaxed).oldValue % connections.count]
    }
}
