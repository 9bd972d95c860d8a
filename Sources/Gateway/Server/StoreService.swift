import Access
import EventLoop
import Postgres
package import Store
import Synchronization
import Telemetry

/// The store `DATABASE_URL` names, as a service. Its start opens, checks and migrates it and
/// loads its tokens and what it counted today (the daily quotas start from it); a store that
/// cannot serve stops the start before anything listens. Its stop closes it (and its threads,
/// or its Postgres client), after its writer has committed the last rows.
final class StoreService: Service {
    /// The open store and what it counted today (user id → tokens).
    struct Opened: Sendable {
        let store: GatewayStore
        let chargedToday: [String: Int]
        /// What was spent since the budgets' day and month began (empty without budgets).
        var spentToday: [Spending] = []
        var spentThisMonth: [Spending] = []
    }

    /// How long a start waits for a Postgres server to answer (the client reconnecting
    /// meanwhile) before it fails: long enough for a server starting beside the gateway.
    static let postgresStartTimeout: Duration = .seconds(10)

    let name = "store"
    private let configuration: GatewayConfiguration
    private let group: EventLoopGroup
    private let registry: MetricsRegistry
    private let logger: Logger
    private let clock: @Sendable () -> Instant
    private let started = StartedValue<Opened>()
    private let close = Mutex<(@Sendable (MonotonicInstant) async -> Void)?>(nil)

    /// Nil when `DATABASE_URL` is `off`. A Postgres client runs on `group`.
    init?(
        configuration: GatewayConfiguration, group: EventLoopGroup, registry: MetricsRegistry, logger: Logger,
        clock: @escaping @Sendable () -> Instant
    ) {
        guard configuration.database != .off else { return nil }
        self.configuration = configuration
        self.group = group
        self.registry = registry
        self.logger = logger
        self.clock = clock
    }

    /// The open store: read only once the start succeeded.
    var opened: Opened { started.value }

    /// Throws ``StoreStartError`` (naming the file or server) when the store cannot serve: a
    /// Postgres server that does not answer within ``postgresStartTimeout`` included. What a
    /// failed start opened, it closes.
    func start() async throws {
        let (backend, close) = try await open()
        let store = GatewayStore(
            backend: backend, configuration: configuration, registry: registry, logger: logger, clock: clock)
        do throws(StoreError) {
            try await store.prepare()
            let charged = try await backend.tokensCharged(onDay: clock().utcDay)
            var opened = Opened(store: store, chargedToday: charged)
            if configuration.hasBudgets {
                let seconds = Int64(clock().secondsSinceEpoch.rounded(.down))
                let calendar = configuration.budgetCalendar
                opened.spentToday = try await backend.spending(since: calendar.start(of: .day, at: seconds) * 1000)
                opened.spentThisMonth = try await backend.spending(
                    since: calendar.start(of: .month, at: seconds) * 1000)
            }
            self.close.withLock { $0 = close }
            started.set(opened)
        } catch {
            await close(.now())
            throw StoreStartError(error: error)
        }
    }

    func stop(deadline: MonotonicInstant) async {
        await close.withLock({ $0 })?(deadline)
    }

    /// The backend, open, and what closes it.
    private func open() async throws -> (any StoreBackend, @Sendable (MonotonicInstant) async -> Void) {
        switch configuration.database {
        case .off:
            preconditionFailure("no store service without a store")
        case .sqlite(let path):
            let pool = try BlockingPool(threadCount: 2, name: "store")
            let sqlite: SQLiteStore
            do {
                sqlite = try await SQLiteStore.open(path: path, pool: pool)
            } catch {
                await pool.shutdown()
                throw StoreStartError(error: error)
            }
            return (
                sqlite,
                { _ in
                    await sqlite.close()
                    await pool.shutdown()
                }
            )
        case .postgres(let postgres):
            // Started with the store rather than as a service of its own: the store is migrated
            // before the start goes on, and the client stops after the writer's last commit.
            let client = PostgresClient(configuration: postgres, group: group, name: "store_postgres")
            try await client.start()
            do {
                let backend = try await PostgresStore.open(client: client, startTimeout: Self.postgresStartTimeout)
                return (backend, { deadline in await client.stop(deadline: deadline) })
            } catch {
                await client.stop(deadline: .now())
                throw StoreStartError(error: error)
            }
        }
    }
}

/// The store could not be opened, checked or migrated: the start stops (exit 2).
package struct StoreStartError: Error, CustomStringConvertible {
    package let error: StoreError
    package var description: String { "the store cannot be used: \(error)" }
}
