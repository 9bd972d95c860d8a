import CSQLite

extension SQLiteConnection {
    /// Copies this connection's whole database into `destination` with SQLite's online
    /// backup API, `pagesPerStep` pages at a time, waiting out a busy or locked database
    /// for up to `busyTimeout` at each step.
    ///
    /// The copy reads inside one read transaction held from the first page to the last, so
    /// it is one consistent snapshot, and a commit by another connection meanwhile neither
    /// shows in it nor restarts it (WAL lets that commit go ahead).
    func backup(into destination: SQLiteConnection, pagesPerStep: Int32 = 256, busyTimeout: Duration) throws(StoreError)
    {
        guard let source = handle, let target = destination.handle else {
            throw StoreError(.closed, message: "\(path): the store is closed")
        }
        try execute("BEGIN")
        defer { if isInTransaction { _ = try? execute("COMMIT") } }
        // A deferred transaction takes its snapshot at the first read.
        _ = try queryFirst("SELECT count(*) FROM sqlite_schema") { $0.int64(0) }

        guard let backup = sqlite3_backup_init(target, "main", source, "main") else {
            throw StoreError(sqlite: sqlite3_extended_errcode(target), connection: target, path: destination.path)
        }
        let clock = ContinuousClock()
        var deadline = clock.now + busyTimeout
        var code: Int32
        repeat {
            code = sqlite3_backup_step(backup, pagesPerStep)
            switch code & 0xFF {
            case SQLITE_OK:
                deadline = clock.now + busyTimeout
            case SQLITE_BUSY, SQLITE_LOCKED:
                guard clock.now < deadline else { break }
                sqlite3_sleep(5)
                code = SQLITE_OK
            default:
                break
            }
        } while code == SQLITE_OK
        // Finishing reports the step's error again, or its own.
        let finish = sqlite3_backup_finish(backup)
        let failure = code == SQLITE_DONE ? finish : code
        guard failure == SQLITE_OK || failure == SQLITE_DONE else {
            var error = StoreError(sqlite: failure, connection: target, path: destination.path)
            error = StoreError(
                error.code, resultCode: error.resultCode, message: "backup of \(path) into \(error.message)")
            throw error
        }
    }
}
