package import EventLoop
import Synchronization

/// An asynchronous Postgres client over libpq's non-blocking API, driven by event loops.
///
/// Each loop of the group has ``connectionsPerLoop`` connections of its own; a call made on
/// one of the group's loops uses that loop's connections and stays on its thread, a call from
/// elsewhere takes the loops in turn. On a connection, calls run one at a time in the order
/// they came.
///
/// As a ``Service``: ``start()`` begins connecting and returns without waiting for the
/// server, which may be down; the connections keep trying, with backoff, and calls made
/// meanwhile wait for them up to their timeout. ``stop(deadline:)`` lets the calls in flight
/// finish up to the deadline, then fails the rest with ``PostgresError/Code/closed``.
///
/// Every error thrown is a ``PostgresError``.
package final class PostgresClient: Service {
    package let name: String
    package let configuration: PostgresConfiguration
    /// Connections each loop holds.
    package let connectionsPerLoop: Int
    private let connections: [LoopBound<PostgresConnection>]
    private let cursor = Atomic<Int>(0)
    private let nextJobID = Atomic<UInt64>(1)
    private let isStopped = Atomic<Bool>(false)

    /// A client on `group`'s loops; it connects at ``start()``.
    package init(
        configuration: PostgresConfiguration, group: EventLoopGroup, connectionsPerLoop: Int = 1,
        name: String = "postgres"
    ) {
        self.configuration = configuration
        self.name = name
        self.connectionsPerLoop = max(1, connectionsPerLoop)
        var connections: [LoopBound<PostgresConnection>] = []
        for loop in group.loops {
            for _ in 0..<self.connectionsPerLoop {
                connections.append(
                    LoopBound(handingOver: PostgresConnection(loop: loop, configuration: configuration), to: loop))
            }
        }
        self.connections = connections
    }

    package func start() async throws {
        for connection in connections {
            connection.withValue { $0.start() }
        }
    }

    /// Whether ``stop(deadline:)`` has begun: from then on every new query is refused.
    package var isStopping: Bool { isStopped.load(ordering: .relaxed) }

    package func stop(deadline: MonotonicInstant) async {
        isStopped.store(true, ordering: .relaxed)
        await withTaskGroup(of: Void.self) { group in
            for connection in connections {
                group.addTask {
                    await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                        connection.withValue { $0.stop(deadline: deadline) { continuation.resume() } }
                    }
                }
            }
        }
    }

    /// Runs `sql` with `parameters` bound to `$1`, `$2`, … and returns its result.
    /// `timeout` (the configuration's query timeout when nil) counts from this call.
    package func query(_ sql: String, _ parameters: [PostgresValue] = [], timeout: Duration? = nil)
        async throws(PostgresError) -> PostgresResult
    {
        try await query(PostgresQuery(sql, parameters), timeout: timeout)
    }

    /// Runs `query` and returns its result.
    package func query(_ query: PostgresQuery, timeout: Duration? = nil) async throws(PostgresError) -> PostgresResult {
        let results = try await run([query], transactional: false, timeout: timeout)
        guard let result = results.first else {
            throw PostgresError(.connection, message: "the server returned no result", query: query.sql)
        }
        return result
    }

    /// Runs `queries` in order as one transaction (BEGIN, the queries, COMMIT) on one
    /// connection, nothing else in between, and returns their results in order. They are sent
    /// together in libpq's pipeline mode, so the transaction costs one round trip whatever
    /// its length. When one fails, the server skips the rest, the transaction is rolled back
    /// and that error thrown; nothing of it is kept. `timeout` bounds the whole transaction.
    package func transaction(_ queries: [PostgresQuery], timeout: Duration? = nil) async throws(PostgresError)
        -> [PostgresResult]
    {
        try await run(queries, transactional: true, timeout: timeout)
    }

    /// How many connections are up now (for tests, health and metrics).
    package func connectedCount() async -> Int {
        var count = 0
        for connection in connections {
            let up = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                connection.withValue { continuation.resume(returning: $0.isConnected) }
            }
            if up { count += 1 }
        }
        return count
    }

    private func run(_ queries: [PostgresQuery], transactional: Bool, timeout: Duration?) async throws(PostgresError)
        -> [PostgresResult]
    {
        guard !isStopped.load(ordering: .relaxed) else {
            throw PostgresError(.closed, message: "the client is stopped")
        }
        let connection = pickConnection()
        let id = nextJobID.add(1, ordering: .relaxed).oldValue
        let timeout = timeout ?? configuration.queryTimeout
        // Set before the cancel is queued on the loop: a submit that runs after it sees the flag,
        // one that ran before it is found by the cancel. Either order cancels the job.
        let cancelled = CancelFlag()
        let result: Result<[PostgresResult], PostgresError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                connection.withValue { connection in
                    if cancelled.isSet {
                        continuation.resume(
                            returning: .failure(PostgresError(.cancelled, message: "the caller was cancelled")))
                        return
                    }
                    connection.submit(id: id, queries, transactional: transactional, timeout: timeout) { result in
                        continuation.resume(returning: result)
                    }
                }
            }
        } onCancel: {
            cancelled.set()
            connection.withValue { $0.cancel(id: id) }
        }
        return try result.get()
    }

    /// One of the calling loop's connections when called on one, else the next loop's in turn;
    /// among a loop's connections, the least busy. Loads are read only on their own loop.
    private func pickConnection() -> LoopBound<PostgresConnection> {
        var start = 0
        var found = false
        for (index, connection) in connections.enumerated() where connection.loop.inEventLoop {
            start = index
            found = true
            break
        }
        if !found {
            let loopIndex = cursor.add(1, ordering: .relaxed).oldValue % (connections.count / connectionsPerLoop)
            start = loopIndex * connectionsPerLoop
        }
        let candidates = connections[start..<start + connectionsPerLoop]
        guard found, candidates.count > 1 else { return candidates[candidates.startIndex] }
        return candidates.min { $0.value.load < $1.value.load } ?? candidates[candidates.startIndex]
    }
}

/// Whether a call's task was cancelled, shared by its cancellation handler and the loop.
private final class CancelFlag: Sendable {
    private let value = Atomic<Bool>(false)

    var isSet: Bool { value.load(ordering: .acquiring) }

    func set() { value.store(true, ordering: .releasing) }
}
