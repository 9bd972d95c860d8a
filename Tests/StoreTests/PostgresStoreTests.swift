import EventLoop
import Postgres
import Synchronization
import TestSupport
import Testing

@testable import Store

extension StoreBackends {
    @Suite("Postgres store: migrations, idempotent appends, a server restart")
    struct PostgresStoreTests {
        /// A client of its own on `group` for `database`, started.
        static func client(
            _ cluster: PostgresCluster, _ database: String, group: EventLoopGroup, queryTimeout: Duration = .seconds(10)
        ) async throws -> PostgresClient {
            let client = PostgresClient(
                configuration: cluster.configuration(database: database, queryTimeout: queryTimeout), group: group)
            try await client.start()
            return client
        }

        static func stop(_ clients: [PostgresClient], _ group: EventLoopGroup) async {
            for client in clients { await client.stop(deadline: MonotonicInstant.now().advanced(by: .seconds(5))) }
            await group.shutdownGracefully()
        }

        @Test(
            "concurrent gateways migrate an empty database once; a newer schema is refused; readers need a migrated one"
        )
        func migrations() async throws {
            let lazy = try #require(LazyPostgresCluster.current)
            let (cluster, database) = try await lazy.createDatabase()
            let group = try EventLoopGroup(loopCount: 2, namePrefix: "pg-store")
            var clients: [PostgresClient] = []
            do {
                for _ in 0..<3 { clients.append(try await Self.client(cluster, database, group: group)) }
                try await Self.migrate(clients)
            } catch {
                await Self.stop(clients, group)
                throw error
            }
            await Self.stop(clients, group)
        }

        private static func migrate(_ clients: [PostgresClient]) async throws {
            let reader = await storeError { () throws(StoreError) in
                _ = try await PostgresStore.open(client: clients[0], readOnly: true)
            }
            #expect(reader?.code == .readOnly)

            // Each makes a cursor key; one is kept, and every gateway reads that one.
            let keys = try await withThrowingTaskGroup(of: [UInt8].self) { tasks in
                for client in clients {
                    tasks.addTask { try await PostgresStore.open(client: client).historyCursorKey }
                }
                var keys: [[UInt8]] = []
                for try await key in tasks { keys.append(key) }
                return keys
            }
            #expect(Set(keys).count == 1 && keys.first?.count == 32)
            let version = try await clients[0].query("SELECT value FROM store_meta WHERE key = 'schema_version'").rows
                .first?.int(0)
            #expect(version == PostgresStore.schemaVersion)
            #expect(try await PostgresStore.open(client: clients[1], readOnly: true).historyCursorKey == keys.first)

            _ = try await clients[0].query("UPDATE store_meta SET value = value + 1 WHERE key = 'schema_version'")
            let newer = await storeError { () throws(StoreError) in _ = try await PostgresStore.open(client: clients[2])
            }
            #expect(
                newer?.code
                    == .newerSchema(found: PostgresStore.schemaVersion + 1, supported: PostgresStore.schemaVersion))
        }

        @Test("a server that cannot be reached fails the open within its start timeout, as unavailable")
        func unreachable() async throws {
            let group = try EventLoopGroup(loopCount: 1, namePrefix: "pg-store")
            // Port 1 on loopback: nothing listens there.
            let client = PostgresClient(
                configuration: PostgresConfiguration(
                    host: "127.0.0.1", port: 1, user: "nobody", database: "none", sslMode: .disable),
                group: group
            )
            try await client.start()
            let started = MonotonicInstant.now()
            let error = await storeError { () throws(StoreError) in
                _ = try await PostgresStore.open(client: client, startTimeout: .milliseconds(500))
            }
            #expect(error?.code == .unavailable)
            #expect(error?.isTransient == true)
            // Gives up rather than retrying on and on: a bound far above the 500 ms timeout, so a
            // loaded machine's scheduling does not decide it.
            #expect(started.nanoseconds(until: .now()) < 30_000_000_000)
            await Self.stop([client], group)
        }

        @Test("a batch past the 65,535-parameter limit goes in as several inserts, all in one transaction")
        func largeBatch() async throws {
            try await withStore(on: .postgres) { store, _ in
                let rows = (0..<5_000).map { ledgerRow("big\($0)", user: "alice") }
                // The batch id, two inserts of rows, the usage and the slots' two roll-ups (one key each).
                #expect(PostgresStore.queries(for: .init(id: PostgresStore.newBatchID(), rows: rows[...])).count == 6)
                try await append(rows, to: store)
                #expect(try await store.dailyUsage(userID: "alice", fromDay: 0).first?.requests == 5_000)
                #expect(
                    try await store.history(userID: "alice", limit: 1, before: nil).items.first?.row.requestID
                        == "big4999")
            }
        }

        @Test("a batch sent again after its commit's answer was lost is stored once, and what came after it too")
        func lostAcknowledgement() async throws {
            try await withStore(on: .postgres) { backend, _ in
                let store = try #require(backend as? PostgresStore)
                let first = (0..<10).map { ledgerRow("first\($0)", user: "alice", token: "tok") }
                // The server commits the batch, but the store never hears back.
                let batch = PostgresStore.LedgerBatch(id: PostgresStore.newBatchID(), rows: first[...])
                _ = try await store.client.transaction(PostgresStore.queries(for: batch))
                store.unresolved.withLock { $0 = [batch] }
                // The writer sends the same rows again, with what arrived meanwhile.
                try await store.append(first + [ledgerRow("later", user: "alice", token: "tok")])
                let items = try await store.history(userID: "alice", limit: 100, before: nil).items.map(\.row.requestID)
                #expect(items == ["later"] + first.map(\.requestID).reversed())
                let usage = try await store.dailyUsage(userID: "alice", fromDay: 0)
                #expect(usage.first?.requests == 11, "\(usage)")
                // The roll-ups went with the batch: counted once too.
                #expect(try await store.rollupTotals(fromSlot: 0, toSlot: .max / 1_000_000).requests == 11)
                #expect(try await store.rollupCallers(fromDay: 0, toDay: 100_000).map(\.requests) == [11])
                #expect(store.unresolved.withLock { $0.isEmpty })
                // Rows that differ from the remembered ones are a new batch.
                store.unresolved.withLock { $0 = [batch] }
                try await store.append([ledgerRow("other", user: "alice", token: "tok")])
                #expect(try await store.dailyUsage(userID: "alice", fromDay: 0).first?.requests == 12)
                #expect(try await store.rollupTotals(fromSlot: 0, toSlot: .max / 1_000_000).requests == 12)
            }
        }
    }
}

@Suite("Postgres store: a server restart under the ledger writer")
struct PostgresStoreRestartTests {
    @Test(
        "rows appended while the server stops and starts again are all stored, each exactly once",
        .timeLimit(.minutes(2)))
    func restartWhileAppending() async throws {
        let cluster = try await PostgresCluster.start()
        let group = try EventLoopGroup(loopCount: 1, namePrefix: "pg-restart")
        var configuration = cluster.configuration(queryTimeout: .seconds(2))
        configuration.maxReconnectDelay = .milliseconds(100)
        let client = PostgresClient(configuration: configuration, group: group)
        var writerConfiguration = LedgerWriter.Configuration()
        writerConfiguration.batchInterval = .milliseconds(2)
        writerConfiguration.maximumBatch = 50
        writerConfiguration.initialRetryDelay = .milliseconds(10)
        writerConfiguration.maximumRetryDelay = .milliseconds(100)
        let failures = Failures()
        var writer: LedgerWriter?
        do {
            try await client.start()
            let store = try await PostgresStore.open(client: client)
            let ledger = LedgerWriter(store: store, configuration: writerConfiguration) { event in
                if case .commitFailed = event { failures.add() }
            }
            writer = ledger
            try await ledger.start()
            let total = 3_000
            let submitting = Task {
                for index in 0..<total {
                    await ledger.submit(ledgerRow("r\(index)", user: "alice", token: "tok"))
                    // Spread the rows over the restart rather than queueing them all at once.
                    if index % 20 == 19 { try? await Task.sleep(for: .milliseconds(1)) }
                }
            }
            await eventually("the ledger has committed 300 rows", within: .seconds(60)) {
                ledger.statistics.committed >= 300
            }
            try await cluster.stopServer()
            await eventually("a failure is seen", within: .seconds(60)) { failures.count > 0 }
            try await cluster.startServer()
            await submitting.value
            await ledger.flush()

            let statistics = ledger.statistics
            #expect(statistics.dropped == 0)
            #expect(statistics.committed == total)
            #expect(failures.count > 0)
            let counts = try await client.query(
                """
                SELECT count(*), count(DISTINCT request_id),
                    (SELECT sum(requests) FROM usage_daily WHERE user_id = 'alice')
                FROM requests
                """
            ).rows.first
            #expect(counts?.int(0) == total)
            #expect(counts?.int(1) == total)
            #expect(counts?.int(2) == total)
        } catch {
            await writer?.stop(deadline: .now())
            await client.stop(deadline: .now())
            await group.shutdownGracefully()
            await cluster.remove()
            throw error
        }
        await writer?.stop(deadline: .now())
        await client.stop(deadline: .now())
        await group.shutdownGracefully()
        await cluster.remove()
    }
}

/// Commit failures the writer reported.
private final class Failures: Sendable {
    private let value = Mutex(0)
    func add() { value.withLock { $0 += 1 } }
    var count: Int { value.withLock { $0 } }
}
