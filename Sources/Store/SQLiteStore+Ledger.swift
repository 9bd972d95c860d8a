extension SQLiteStore {
    public func append(_ rows: [LedgerRow]) async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try Self.insert(rows, into: connection)
                if self.rollupsEnabled { try Self.addRollups(of: rows, into: connection) }
                for (key, total) in LedgerTotals.usage(of: rows) {
                    try connection.execute(
                        """
                        INSERT INTO usage_daily (user_id, day, requests, input_tokens, output_tokens)
                        VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (user_id, day) DO UPDATE SET requests = requests + excluded.requests,
                            input_tokens = input_tokens + excluded.input_tokens,
                            output_tokens = output_tokens + excluded.output_tokens
                        """,
                        [
                            .text(key.userID), .integer(key.day), .integer(total.requests), .integer(total.inputTokens),
                            .integer(total.outputTokens),
                        ]
                    )
                }
                for (tokenID, lastUsed) in LedgerTotals.lastUses(in: rows) {
                    try connection.execute(
                        "UPDATE tokens SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?",
                        [.integer(lastUsed), .text(tokenID)]
                    )
                }
            }
        }
    }

    /// One cached single-row statement run per row: measured no slower than multi-row
    /// `INSERT`s for batches of hundreds of rows, and one statement in the cache rather than
    /// one per batch size.
    private static func insert(_ rows: [LedgerRow], into connection: SQLiteConnection) throws(StoreError) {
        var values: [SQLiteValue] = []
        values.reserveCapacity(RequestsTable.columnCount)
        for row in rows {
            values.removeAll(keepingCapacity: true)
            RequestsTable.values(of: row, into: &values)
            try connection.execute(RequestsTable.insert, values)
        }
    }

    /// One cached single-key upsert per table, run once per distinct key of the batch.
    private static func addRollups(of rows: [LedgerRow], into connection: SQLiteConnection) throws(StoreError) {
        let (daily, slots) = RollupTables.aggregate(rows)
        var values: [SQLiteValue] = []
        values.reserveCapacity(RollupTables.dailyColumns.count)
        for (key, counts) in daily {
            values.removeAll(keepingCapacity: true)
            values += [
                .integer(key.day), .text(key.userID), .text(key.task), .text(key.model), .integer(key.status),
                .text(key.code), .text(counts.plan),
            ]
            appendCounts(counts, lastSeen: true, to: &values)
            try connection.execute(dailyUpsert, values)
        }
        for (key, counts) in slots {
            values.removeAll(keepingCapacity: true)
            values += [.integer(key.slot), .text(key.task), .text(key.model), .integer(key.status), .text(key.code)]
            appendCounts(counts, lastSeen: false, to: &values)
            try connection.execute(slotsUpsert, values)
        }
    }

    /// requests, cache_hits, input_tokens, output_tokens, last_seen_ms (daily only), then the
    /// two histograms: the order of ``RollupTables/dailyColumns`` and ``RollupTables/slotColumns``.
    private static func appendCounts(_ counts: RollupTables.Counts, lastSeen: Bool, to values: inout [SQLiteValue]) {
        values += [
            .integer(counts.requests), .integer(counts.cacheHits), .integer(counts.inputTokens),
            .integer(counts.outputTokens),
        ]
        if lastSeen { values.append(.integer(counts.lastSeen)) }
        for count in counts.added.counts + counts.upstream.counts { values.append(.integer(count)) }
    }

    private static let dailyUpsert = RollupTables.upsertDaily(.sqlite, rows: 1)
    private static let slotsUpsert = RollupTables.upsertSlots(.sqlite, rows: 1)

    /// The UTC day (days since the Unix epoch) of an instant in milliseconds, rounded down.
    static func utcDay(ofMilliseconds milliseconds: Int64) -> Int64 {
        LedgerTotals.utcDay(ofMilliseconds: milliseconds)
    }
}
