import EventLoop
package import Postgres
import Synchronization

/// The shared store: one PostgreSQL database that several gateways (and the command line)
/// use at once, with the same tables and the same behaviour as ``SQLiteStore``.
///
/// All its work goes through a ``PostgresClient`` on the event loops, which the caller
/// starts before ``open(client:readOnly:startTimeout:)`` and stops after the store's last
/// use; nothing blocks a thread. A server that goes away makes calls fail with
/// ``StoreError/Code/unavailable`` (transient) until the client has reconnected.
///
/// History read back has no token id: the store keeps only each token's last use.
package final class PostgresStore: StoreBackend, Sendable {
    /// The schema version this binary writes (`store_meta`'s `schema_version`).
    package static let schemaVersion = PostgresSchema.latestVersion

    /// `postgres host:port/database`, for messages: never the user's password.
    package let name: String
    package let historyCursorKey: [UInt8]
    let client: PostgresClient
    /// The sub-batches of the last ``append(_:)`` that threw, whose commits may have happened
    /// (see `PostgresStore+Ledger.swift`).
    let unresolved = Mutex<[LedgerBatch]>([])
    /// Behind ``rollupsEnabled``.
    let rollupSwitch = Atomic<Bool>(true)

    init(client: PostgresClient, historyCursorKey: [UInt8] = []) {
        self.client = client
        self.historyCursorKey = historyCursorKey
        let configuration = client.configuration
        name =
            "postgres \(configuration.host):\(configuration.port)/\(configuration.database ?? configuration.user ?? "")"
    }

    /// The store on the database `client` connects to, migrated to ``schemaVersion``.
    ///
    /// A server that cannot be reached is waited for up to `startTimeout` (the client keeps
    /// reconnecting meanwhile); then, as for a database a newer binary wrote, this throws, so a
    /// gateway fails its start rather than serving without its store.
    ///
    /// - Parameter readOnly: for tools that only read: the database must already be at the
    ///   current schema, and nothing is written at open.
    package static func open(client: PostgresClient, readOnly: Bool = false, startTimeout: Duration = .seconds(10))
        async throws(StoreError) -> PostgresStore
    {
        let store = PostgresStore(client: client)
        if readOnly {
            try await PostgresSchema.check(client, store: store.name, timeout: startTimeout)
        } else {
            try await PostgresSchema.migrate(client, store: store.name, timeout: startTimeout)
        }
        return PostgresStore(client: client, historyCursorKey: try await store.historyCursorKey(create: !readOnly))
    }

    /// The store's history cursor key, made first when `create` and the database has none.
    /// Gateways starting at once both insert; the first insert wins and all of them read it.
    private func historyCursorKey(create: Bool) async throws(StoreError) -> [UInt8] {
        if create {
            try await query(
                "INSERT INTO store_secrets (name, value) VALUES ('history_cursor', $1) ON CONFLICT (name) DO NOTHING",
                [.bytes(SystemRandom.bytes(32))]
            )
        }
        return try await query("SELECT value FROM store_secrets WHERE name = 'history_cursor'").rows.first?[0] ?? []
    }

    /// Runs one statement.
    @discardableResult
    func query(_ sql: String, _ parameters: [PostgresValue] = []) async throws(StoreError) -> PostgresResult {
        do {
            return try await client.query(sql, parameters)
        } catch {
            throw StoreError(postgres: error, store: name)
        }
    }

    /// Runs `queries` as one transaction, in one round trip.
    @discardableResult
    func transaction(_ queries: [PostgresQuery]) async throws(StoreError) -> [PostgresResult] {
        do {
            return try await client.transaction(queries)
        } catch {
            throw StoreError(postgres: error, store: name)
        }
    }

    /// `($1, $2, …), ($n+1, …)`: the placeholders of a multi-row `VALUES` list.
    static func placeholders(rows: Int, columns: Int) -> String {
        var text = ""
        text.reserveCapacity(rows * columns * 5)
        for row in 0..<rows {
            text += row == 0 ? "(" : ", ("
            for column in 0..<columns {
                if column > 0 { text += ", " }
                text += "$\(row * columns + column + 1)"
            }
            text += ")"
        }
        return text
    }
}
