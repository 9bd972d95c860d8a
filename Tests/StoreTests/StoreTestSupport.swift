import EventLoop
import Foundation
import Postgres
import TestSupport
import Testing

@testable import Store

#if canImport(Glibc)
    import Glibc
#endif

/// A fresh directory under the system's temporary directory, removed by ``remove()``.
struct TemporaryDirectory {
    let path: String

    init() throws {
        var base = NSTemporaryDirectory()
        while base.count > 1 && base.hasSuffix("/") { base.removeLast() }
        var template = Array((base + "/store-tests-XXXXXX").utf8CString)
        guard mkdtemp(&template) != nil else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        path = String(decoding: template.dropLast().map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    func file(_ name: String) -> String { path + "/" + name }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Runs `body` with a pool and a temporary directory, both gone after.
func withPoolAndDirectory<T>(threads: Int = 2, _ body: (BlockingPool, TemporaryDirectory) async throws -> T)
    async throws -> T
{
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let pool = try BlockingPool(threadCount: threads, name: "store-test")
    do {
        let result = try await body(pool, directory)
        await pool.shutdown()
        return result
    } catch {
        await pool.shutdown()
        throw error
    }
}

/// Runs `body` over a store opened in a temporary directory, closed after.
func withStore<T>(threads: Int = 2, _ body: (SQLiteStore, BlockingPool, TemporaryDirectory) async throws -> T)
    async throws -> T
{
    try await withPoolAndDirectory(threads: threads) { pool, directory in
        let store = try await SQLiteStore.open(path: directory.file("store.db"), pool: pool)
        do {
            let result = try await body(store, pool, directory)
            await store.close()
            return result
        } catch {
            await store.close()
            throw error
        }
    }
}

/// The code of the error `body` throws, nil when it throws none.
func storeErrorCode(_ body: () async throws(StoreError) -> Void) async -> StoreError.Code? {
    await storeError(body)?.code
}

func storeError(_ body: () async throws(StoreError) -> Void) async -> StoreError? {
    do {
        try await body()
        return nil
    } catch {
        return error
    }
}

/// A day's first millisecond (days since the epoch, UTC).
func startOfDay(_ day: Int64) -> Int64 { day * 86_400_000 }

/// A ledger row with what a test varies; the rest plausible.
func ledgerRow(
    _ requestID: String, user: String?, at milliseconds: Int64 = startOfDay(20_000), inputTokens: Int? = 10,
    outputTokens: Int? = 5,
    cacheHit: Bool = false, token: String? = nil, result: String? = nil, costMicros: Int64? = nil,
    route: String = "/api/process"
) -> LedgerRow {
    var row = LedgerRow(
        requestID: requestID, userID: user, tokenID: token, task: "summarize", tone: "neutral", route: "/api/process",
        model: "model-a",
        inputLength: 120, inputTokens: inputTokens, outputTokens: outputTokens, status: 200, code: nil,
        outcome: cacheHit ? "cache_hit" : "done", cacheHit: cacheHit, durationMilliseconds: 12.5,
        createdAtMilliseconds: milliseconds,
        result: result
    )
    row.costMicros = costMicros
    row.route = route
    return row
}

func append(_ rows: [LedgerRow], to store: some LedgerStore) async throws {
    try await store.append(rows)
}

/// The suites that run on every backend, inside one suite so that all of them share one
/// Postgres cluster, started by the first test that needs it.
@Suite("Store backends", .lazyPostgresCluster)
struct StoreBackends {}

/// The backends the shared store tests run on.
enum Backend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite
    case postgres

    var testDescription: String { rawValue }

    /// The most rows one deleting transaction removes.
    var deletionBatch: Int {
        switch self {
        case .sqlite: SQLiteStore.deletionBatch
        case .postgres: PostgresStore.deletionBatch
        }
    }
}

/// What a test may do beside the store it was given.
struct StoreFixture {
    /// What the store's error messages start with: the file, or `postgres host:port/db`.
    let name: String
    /// Opens a second store on the same database, and what closes it.
    let openAnother: () async throws -> (any StoreBackend, () async -> Void)
    /// Makes the store refuse (as a constraint) a row whose request id is `poison`, as
    /// another process changing the database would.
    let poison: () async throws -> Void
}

/// Runs `body` over a fresh store on `backend`: a new file, or a new database of the suite's
/// Postgres cluster; closed after.
func withStore<T>(on backend: Backend, _ body: (any StoreBackend, StoreFixture) async throws -> T) async throws -> T {
    switch backend {
    case .sqlite:
        return try await withStore { store, pool, directory in
            let path = directory.file("store.db")
            let fixture = StoreFixture(
                name: path,
                openAnother: {
                    let other = try await SQLiteStore.open(path: path, pool: pool)
                    return (other, { await other.close() })
                },
                poison: {
                    let trigger = try sqlite3(
                        path,
                        """
                        CREATE TRIGGER poison BEFORE INSERT ON requests WHEN NEW.request_id = 'poison'
                        BEGIN SELECT RAISE(ABORT, 'poisoned'); END;
                        """
                    )
                    try #require(trigger.status == 0)
                }
            )
            return try await body(store, fixture)
        }
    case .postgres:
        let lazy = try #require(LazyPostgresCluster.current, "the test runs outside StoreBackends")
        let (cluster, database) = try await lazy.createDatabase()
        let group = try EventLoopGroup(loopCount: 1, namePrefix: "store-pg")
        var clients: [PostgresClient] = []
        func open() async throws -> PostgresStore {
            let client = PostgresClient(configuration: cluster.configuration(database: database), group: group)
            clients.append(client)
            try await client.start()
            return try await PostgresStore.open(client: client)
        }
        func close() async {
            for client in clients { await client.stop(deadline: MonotonicInstant.now().advanced(by: .seconds(5))) }
            await group.shutdownGracefully()
        }
        do {
            let store = try await open()
            let fixture = StoreFixture(
                name: store.name,
                openAnother: { (try await open(), {}) },
                poison: {
                    _ = try await store.client.query(
                        """
                        CREATE FUNCTION poison() RETURNS trigger LANGUAGE plpgsql AS $$
                        BEGIN
                            IF NEW.request_id = 'poison' THEN
                                RAISE EXCEPTION 'poisoned' USING ERRCODE = 'check_violation';
                            END IF;
                            RETURN NEW;
                        END $$
                        """)
                    _ = try await store.client.query(
                        "CREATE TRIGGER poison BEFORE INSERT ON requests FOR EACH ROW EXECUTE FUNCTION poison()")
                }
            )
            let result = try await body(store, fixture)
            await close()
            return result
        } catch {
            await close()
            throw error
        }
    }
}

/// What the `sqlite3` command prints for `sql` on `path`, with its exit status.
func sqlite3(_ path: String, _ sql: String) throws -> (status: Int32, output: String) {
    let (status, output) = try Subprocess.run("/usr/bin/sqlite3", [path, sql])
    return (status, output.trimmingCharacters(in: .whitespacesAndNewlines))
}

/// Runs a command to its end; its exit status.
@discardableResult
func run(_ executable: String, _ arguments: [String]) throws -> Int32 {
    try Subprocess(executable, arguments).wait()
}
