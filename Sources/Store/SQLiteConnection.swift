import CSQLite

/// One connection to a SQLite file, with its cache of prepared statements and its
/// transactions.
///
/// Not `Sendable`, and used by one thread at a time: it is opened with
/// `SQLITE_OPEN_NOMUTEX`, so SQLite takes no lock of its own, and its owner keeps it behind a
/// mutex. ``close()`` closes it; `deinit` does too, as a safety net.
final class SQLiteConnection {
    /// SQLite configured once, before its first use: no memory statistics, whose global
    /// mutex every allocation of every connection would take (nothing here reads them).
    private static let libraryConfigured: Bool = CSQLite_config_memstatus(0) == SQLITE_OK

    enum Mode {
        /// Reads and writes, creating the file when it is missing.
        case readWrite
        /// Reads only; the file must exist.
        case readOnly
    }

    /// The database file, named in every error.
    let path: String
    /// The handle, for the wrappers right above SQLite in this module (statements,
    /// backup); nil once closed.
    private(set) var handle: OpaquePointer?
    private var statements: [StatementKey: SQLiteStatement] = [:]

    /// Opens `path` with extended result codes and defensive mode on, and SQLite's busy
    /// handler waiting up to `busyTimeout` for another connection's lock.
    init(path: String, mode: Mode, busyTimeout: Duration) throws(StoreError) {
        self.path = path
        // A NUL would end the C path early and open another file.
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw StoreError(.cannotOpen, message: "'\(path)' is not a database path")
        }
        _ = Self.libraryConfigured
        let access = mode == .readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard code == SQLITE_OK, let handle else {
            let error = StoreError(sqlite: code, connection: handle, path: path)
            // SQLite hands out a handle even when opening fails; it must be closed all the same.
            sqlite3_close_v2(handle)
            throw error
        }
        self.handle = handle
        sqlite3_extended_result_codes(handle, 1)
        let defensive = CSQLite_db_config_defensive(handle, 1)
        guard defensive == SQLITE_OK else {
            close()
            throw StoreError(sqlite: defensive, connection: nil, path: path, sql: "SQLITE_DBCONFIG_DEFENSIVE")
        }
        let milliseconds =
            busyTimeout.components.seconds * 1000 + busyTimeout.components.attoseconds / 1_000_000_000_000_000
        sqlite3_busy_timeout(handle, Int32(clamping: max(0, milliseconds)))
    }

    deinit {
        close()
    }

    /// Finalizes the cached statements and closes the handle. Idempotent.
    func close() {
        guard let handle else { return }
        for statement in statements.values { statement.finalize() }
        statements = [:]
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    /// Whether SQLite opened the main database read-only (asked to, or because the file
    /// could not be opened for writing).
    var isReadOnly: Bool {
        guard let handle else { return true }
        return sqlite3_db_readonly(handle, "main") == 1
    }

    /// Whether a transaction is open (SQLite is out of autocommit mode).
    var isInTransaction: Bool {
        guard let handle else { return false }
        return sqlite3_get_autocommit(handle) == 0
    }

    /// Runs `sql` (one statement, cached) with `values` to the end; returns the rows it
    /// changed (triggers' changes not counted).
    @discardableResult
    func execute(_ sql: String, _ values: [SQLiteValue] = []) throws(StoreError) -> Int {
        try run(sql, values) { statement throws(StoreError) in
            while try statement.step() {}
            guard let handle else { return 0 }
            return Int(sqlite3_changes64(handle))
        }
    }

    /// Runs `sql` (one statement, cached) with `values` and hands each row to `read`.
    func query(_ sql: String, _ values: [SQLiteValue] = [], _ read: (borrowing SQLiteRow) throws(StoreError) -> Void)
        throws(StoreError)
    {
        try run(sql, values) { statement throws(StoreError) in
            while try statement.step() { try statement.withRow(read) }
        }
    }

    /// The first row of `sql` read by `read`, nil when there is none.
    func queryFirst<T>(
        _ sql: String, _ values: [SQLiteValue] = [], _ read: (borrowing SQLiteRow) throws(StoreError) -> T
    ) throws(StoreError) -> T? {
        try run(sql, values) { statement throws(StoreError) in
            try statement.step() ? statement.withRow(read) : nil
        }
    }

    /// Runs a script of several statements, each prepared once and not cached (migrations).
    func executeScript(_ script: String) throws(StoreError) {
        let handle = try open()
        var failure: StoreError?
        script.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while failure == nil, let current = next, current.pointee != 0 {
                var statement: OpaquePointer?
                var code = sqlite3_prepare_v2(handle, current, -1, &statement, &next)
                guard code == SQLITE_OK else {
                    failure = StoreError(sqlite: code, connection: handle, path: path, sql: String(cString: current))
                    break
                }
                // Only white space or a comment was left.
                guard let statement else { continue }
                repeat { code = sqlite3_step(statement) } while code == SQLITE_ROW
                if code != SQLITE_DONE {
                    failure = StoreError(
                        sqlite: code, connection: handle, path: path, sql: String(cString: sqlite3_sql(statement)))
                }
                sqlite3_finalize(statement)
            }
        }
        if let failure { throw failure }
    }

    /// Runs `body` in a `BEGIN IMMEDIATE` transaction and commits it; rolls it back when
    /// `body` or the commit throws. IMMEDIATE takes the write lock at the start, where the
    /// busy timeout applies: a deferred transaction that read first would fail at the upgrade
    /// with no wait.
    func transaction<T>(_ body: () throws(StoreError) -> T) throws(StoreError) -> T {
        try execute("BEGIN IMMEDIATE")
        do throws(StoreError) {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            // SQLite may have rolled back already (after some errors it does); a second
            // ROLLBACK would only fail.
            if isInTransaction { _ = try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Runs `use` over the cached statement for `sql` and resets it after; a statement that
    /// failed leaves the cache, since a reset does not always bring it back.
    private func run<T>(_ sql: String, _ values: [SQLiteValue], _ use: (SQLiteStatement) throws(StoreError) -> T)
        throws(StoreError) -> T
    {
        let statement = try cachedStatement(sql)
        do throws(StoreError) {
            try statement.bind(values)
            let result = try use(statement)
            statement.reset()
            return result
        } catch {
            statements[StatementKey(sql: sql)] = nil
            statement.finalize()
            throw error
        }
    }

    private func cachedStatement(_ sql: String) throws(StoreError) -> SQLiteStatement {
        if let statement = statements[StatementKey(sql: sql)] { return statement }
        let statement = try SQLiteStatement(sql: sql, connection: open(), path: path, persistent: true)
        statements[StatementKey(sql: sql)] = statement
        return statement
    }

    private func open() throws(StoreError) -> OpaquePointer {
        guard let handle else { throw StoreError(.closed, message: "\(path): the store is closed") }
        return handle
    }
}

/// A cached statement's SQL as a dictionary key, hashed by its length and its first and last
/// bytes: hashing a whole statement (hundreds of bytes, twice a request for the ledger) cost
/// more than running the lookup; equality still compares the whole text.
private struct StatementKey: Hashable {
    let sql: String

    func hash(into hasher: inout Hasher) {
        var sql = sql
        sql.withUTF8 { bytes in
            hasher.combine(bytes.count)
            let edge = min(bytes.count, 32)
            let raw = UnsafeRawBufferPointer(bytes)
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.prefix(edge)))
            hasher.combine(bytes: UnsafeRawBufferPointer(rebasing: raw.suffix(edge)))
        }
    }
}
