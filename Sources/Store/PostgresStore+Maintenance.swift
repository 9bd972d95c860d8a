import Postgres

extension PostgresStore {
    /// How long a committed ledger batch's id is kept: far longer than a retry takes to come
    /// (the writer retries within seconds of the server's return).
    static let batchIDRetention = "1 hour"

    /// Deletes in bounded batches, each statement a transaction of its own, and forgets ledger
    /// batch ids past ``batchIDRetention``. Returns what was deleted of history and usage.
    package func purge(historyBeforeMilliseconds: Int64, usageBeforeDay: Int64) async throws(StoreError) -> (
        history: Int, usageDays: Int
    ) {
        let history = try await deleteInBatches(
            """
            DELETE FROM requests
            WHERE seq IN (SELECT seq FROM requests WHERE created_at < $1 LIMIT \(Self.deletionBatch))
            """,
            [.int(Int(historyBeforeMilliseconds))]
        )
        let days = try await deleteInBatches(
            """
            DELETE FROM usage_daily WHERE (user_id, day) IN
                (SELECT user_id, day FROM usage_daily WHERE day < $1 LIMIT \(Self.deletionBatch))
            """,
            [.int(Int(usageBeforeDay))]
        )
        // The roll-ups go with usage_daily (USAGE_RETENTION_DAYS).
        for (table, key, bound) in RollupTables.retention(beforeDay: usageBeforeDay) {
            _ = try await deleteInBatches(
                """
                DELETE FROM \(table) WHERE (\(key)) IN
                    (SELECT \(key) FROM \(table) WHERE \(bound.column) < $1 LIMIT \(Self.deletionBatch))
                """,
                [.int(Int(bound.value))]
            )
        }
        _ = try await deleteInBatches(
            """
            DELETE FROM ledger_batches WHERE id IN (SELECT id FROM ledger_batches
                WHERE committed_at < now() - interval '\(Self.batchIDRetention)' LIMIT \(Self.deletionBatch))
            """,
            []
        )
        return (history, days)
    }

    /// Nothing to do: the server checkpoints its own write-ahead log.
    package func checkpoint() async throws(StoreError) -> (logFrames: Int, checkpointed: Int) {
        (0, 0)
    }

    /// Refused: a consistent copy of a Postgres database is the server's business (`pg_dump`,
    /// or its base backups and WAL archive), made with the server's credentials, not a file
    /// the gateway writes.
    package func backup(to path: String) async throws(StoreError) {
        throw StoreError(
            .rejected,
            message: "\(name): the gateway does not back up a Postgres store; "
                + "use pg_dump (or the server's own backups) instead"
        )
    }

    /// The server guards its own pages (checksums, WAL); this checks what is the gateway's:
    /// the schema version and counters it needs, and the sums it keeps. Empty when all is well.
    package func integrityCheck() async throws(StoreError) -> [String] {
        let result = try await query(
            """
            SELECT (SELECT value FROM store_meta WHERE key = 'schema_version'),
                   (SELECT count(*) FROM store_meta WHERE key = 'token_generation'),
                   (SELECT count(*) FROM usage_daily WHERE requests < 0 OR input_tokens < 0 OR output_tokens < 0),
                   (SELECT count(*) FROM requests WHERE seq <= 0),
                   (SELECT count(*) FROM jobs WHERE done < 0 OR total < 0 OR input_tokens < 0 OR output_tokens < 0),
                   (SELECT count(*) FROM store_meta WHERE key = 'device_generation')
            """
        )
        guard let row = result.rows.first else { return ["\(name): the check returned nothing"] }
        var findings: [String] = []
        if row.int(0) != Self.schemaVersion {
            findings.append("schema_version is \(row.string(0) ?? "missing"), expected \(Self.schemaVersion)")
        }
        if row.int(1) != 1 { findings.append("store_meta has no token_generation") }
        if let negative = row.int(2), negative > 0 {
            findings.append("usage_daily: \(negative) rows with negative counts")
        }
        if let sequences = row.int(3), sequences > 0 {
            findings.append("requests: \(sequences) rows with a sequence number below 1")
        }
        if let jobs = row.int(4), jobs > 0 { findings.append("jobs: \(jobs) rows with negative counts") }
        if row.int(5) != 1 { findings.append("store_meta has no device_generation") }
        return findings
    }
}
