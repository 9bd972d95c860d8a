import EventLoop
import Synchronization

/// The embedded store: one SQLite file in WAL mode, beside the gateway.
///
/// It is `Sendable` without any unchecked promise, because no connection is ever shared
/// unguarded: each one lives in a ``ConnectionSlot``, behind a mutex of its own, and is only
/// lent to a closure while that mutex is held. The writer connection is used by ``append(_:)``,
/// which the single ledger writer calls, and by the few other writes (deletes, tokens,
/// retention); its mutex serializes them all the same. Reads take the first free reader
/// connection, of which there are as many as the pool has threads; SQLite's WAL lets them
/// read while the writer commits. Every async method runs its SQLite work on the
/// ``BlockingPool`` given at ``open(path:pool:busyTimeout:readOnly:)``, never on the
/// caller's thread.
///
/// History read back has no token id: the store keeps only each token's last use.
package final class SQLiteStore: LedgerStore, HistoryStore, UsageStore, TokenRepository, DeviceRepository,
    IdempotencyRepository, StoreMaintenance, JobStore, AdminStore, Sendable
{
    /// The schema version this binary writes (`PRAGMA user_version`).
    package static let schemaVersion = StoreSchema.latestVersion

    /// The database file.
    package let path: String
    package let historyCursorKey: [UInt8]
    let pool: BlockingPool
    let busyTimeout: Duration
    let writer: ConnectionSlot
    private let readers: [ConnectionSlot]
    /// Copies the write-ahead log back into the database (``checkpoint()``), so the writer's
    /// commits never do: a checkpoint under a commit would hold a strict answer for its length.
    private let checkpointer: ConnectionSlot
    // Where a read waits when every reader is taken, turn about.
    private let nextReader = Atomic<Int>(0)
    /// Behind ``rollupsEnabled``.
    let rollupSwitch = Atomic<Bool>(true)

    init(
        path: String, pool: BlockingPool, busyTimeout: Duration, writer: sending SQLiteConnection,
        historyCursorKey: [UInt8]
    ) {
        self.path = path
        self.historyCursorKey = historyCursorKey
        self.pool = pool
        self.busyTimeout = busyTimeout
        self.writer = ConnectionSlot(path: path, connection: writer)
        checkpointer = ConnectionSlot(path: path) { () throws(StoreError) -> SQLiteConnection in
            try SQLiteConnection(path: path, mode: .readWrite, busyTimeout: busyTimeout)
        }
        readers = (0..<max(1, pool.threadCount)).map { _ in
            ConnectionSlot(path: path) { () throws(StoreError) -> SQLiteConnection in
                try SQLiteConnection(path: path, mode: .readOnly, busyTimeout: busyTimeout)
            }
        }
    }

    /// Closes every connection once the work using it is done. Later calls throw
    /// ``StoreError/Code/closed``.
    package func close() async {
        do {
            try await pool.run { self.closeConnections() }
        } catch {
            // The pool is shut down, so nothing of ours can be running on it.
            closeConnections()
        }
    }

    private func closeConnections() {
        // Readers first: the last connection to close checkpoints the WAL into the file,
        // and only the writer can.
        for reader in readers { reader.close() }
        checkpointer.close()
        writer.close()
    }

    /// Runs `body` over a reader connection, on the pool.
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> T)
        async throws(StoreError) -> T
    {
        try await onPool { () throws(StoreError) -> T in try self.withReader(body) }
    }

    /// Runs `body` over the first reader connection that is free, on this thread.
    func withReader<T: Sendable>(_ body: @Sendable (SQLiteConnection) throws(StoreError) -> T) throws(StoreError) -> T {
        for reader in readers {
            if let outcome = reader.withConnectionIfFree(body) { return try outcome.get() }
        }
        // More threads read at once than there are readers (a pool shared with others).
        let turn = nextReader.wrappingAdd(1, ordering: .relaxed).oldValue
        return try readers[Int(UInt(bitPattern: turn) % UInt(readers.count))].withConnection(body)
    }

    /// Copies what the write-ahead log holds back into the database file, without waiting for
    /// (or holding up) the writer or readers (`PASSIVE`); returns the frames in the log and
    /// those copied. The gateway runs it every second.
    package func checkpoint() async throws(StoreError) -> (logFrames: Int, checkpointed: Int) {
        try await onPool { () throws(StoreError) -> (logFrames: Int, checkpointed: Int) in
            try self.checkpointer.withConnection { connection throws(StoreError) in
                try connection.queryFirst("PRAGMA wal_checkpoint(PASSIVE)") {
                    (logFrames: $0.int(1), checkpointed: $0.int(2))
                }
                    ?? (logFrames: 0, checkpointed: 0)
            }
        }
    }

    /// Runs `body` over the writer connection, on the pool.
    func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws(StoreError) -> T)
        async throws(StoreError) -> T
    {
        try await onPool { () throws(StoreError) -> T in try self.writer.withConnection(body) }
    }

    func onPool<T: Sendable>(_ work: @escaping @Sendable () throws(StoreError) -> T) async throws(StoreError) -> T {
        try await Self.onPool(pool, path: path, work)
    }

    static func onPool<T: Sendable>(
        _ pool: BlockingPool, path: String, _ work: @escaping @Sendable () throws(StoreError) -> T
    ) async throws(StoreError) -> T {
        let outcome: Result<T, StoreError>
        do {
            outcome = try await pool.run { Result { () throws(StoreError) -> T in try work() } }
        } catch {
            throw StoreError(.closed, message: "\(path): the store's blocking pool is shut down")
        }
        return try outcome.get()
    }
}
