import EventLoop

#if canImport(Glibc)
    import Glibc
#endif

extension SQLiteStore {
    package func purge(historyBeforeMilliseconds: Int64, usageBeforeDay: Int64) async throws(StoreError) -> (
        history: Int, usageDays: Int
    ) {
        let counts = try await onPool { () throws(StoreError) -> [Int] in
            let history = try self.deleteInBatches(
                """
                DELETE FROM requests
                WHERE seq IN (SELECT seq FROM requests WHERE created_at < ? LIMIT \(Self.deletionBatch))
                """,
                [.integer(historyBeforeMilliseconds)]
            )
            let days = try self.deleteInBatches(
                """
                DELETE FROM usage_daily WHERE (user_id, day) IN
                    (SELECT user_id, day FROM usage_daily WHERE day < ? LIMIT \(Self.deletionBatch))
                """,
                [.integer(usageBeforeDay)]
            )
            // The roll-ups go with usage_daily (USAGE_RETENTION_DAYS); their keys start with the
            // day or slot, so each batch is a range at the start of the primary key.
            for (table, key, bound) in RollupTables.retention(beforeDay: usageBeforeDay) {
                _ = try self.deleteInBatches(
                    """
                    DELETE FROM \(table) WHERE (\(key)) IN
                        (SELECT \(key) FROM \(table) WHERE \(bound.column) < ? LIMIT \(Self.deletionBatch))
                    """,
                    [.integer(bound.value)]
                )
            }
            return [history, days]
        }
        return (counts[0], counts[1])
    }

    /// Copies the store into a new file at `path` with SQLite's online backup API, from one
    /// snapshot, while the ledger goes on writing. Refuses a `path` that exists; a copy
    /// that fails is removed.
    package func backup(to path: String) async throws(StoreError) {
        try await onPool { () throws(StoreError) in
            try Self.createNewFile(path)
            do throws(StoreError) {
                try self.withReader { source throws(StoreError) in
                    let destination = try SQLiteConnection(path: path, mode: .readWrite, busyTimeout: self.busyTimeout)
                    defer { destination.close() }
                    try source.backup(into: destination, busyTimeout: self.busyTimeout)
                }
            } catch {
                unlink(path)
                throw error
            }
        }
    }

    package func integrityCheck() async throws(StoreError) -> [String] {
        try await read { connection throws(StoreError) in
            var findings: [String] = []
            try connection.query("PRAGMA integrity_check") { findings.append($0.text(0)) }
            if findings == ["ok"] { findings = [] }
            // The integrity check leaves foreign keys out: a job's items with no job.
            try connection.query("PRAGMA foreign_key_check") {
                findings.append("\($0.text(0)): row \($0.int64(1)) refers to a \($0.text(2)) row that does not exist")
            }
            return findings
        }
    }

    /// Creates `path` empty, only when nothing is there (`O_EXCL`), readable by its owner only
    /// (0600, whatever the umask): a backup holds what the store holds.
    private static func createNewFile(_ path: String) throws(StoreError) {
        guard !path.isEmpty, !path.utf8.contains(0) else {
            throw StoreError(.cannotOpen, message: "'\(path)' is not a backup path")
        }
        let fd = Glibc.open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            let reason =
                code == EEXIST
                ? "it exists already (a backup goes to a new file)"
                : IOError(errnoCode: code, reason: "open").description
            throw StoreError(.cannotOpen, message: "\(path): cannot write the backup there: \(reason)")
        }
        defer { Glibc.close(fd) }
        do throws(StoreError) {
            try restrictToOwner(fd, path: path)
        } catch {
            unlink(path)
            throw error
        }
    }
}
