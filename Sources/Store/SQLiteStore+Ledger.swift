extension SQLiteStore {
    package func append(_ rows: [LedgerRow]) async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try Self.insert(rows, into: connection)
                let rollups = self.rollupsEnabled
                if rollups { try Self.addRollups(of: rows, into: connection) }
                var values: [SQLiteValue] = []
                for (key, total) in LedgerTotals.usage(of: rows) {
                    values.removeAll(keepingCapacity: true)
                    values += [
                        .text(key.userID), .integer(key.day), .integer(total.requests), .integer(total.inputTokens),
                        .integer(total.outputTokens), .integer(total.costMicros),
                    ]
                    if rollups {
                        values += [
                            .integer(total.cacheHits), .integer(total.errors), .integer(total.lastSeen),
                            .text(total.plan),
                        ]
                    }
                    try connection.execute(rollups ? Self.usageUpsert : Self.plainUsageUpsert, values)
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
        let (slots, latency) = RollupTables.aggregate(rows)
        var values: [SQLiteValue] = []
        values.reserveCapacity(RollupTables.latencyColumns.count)
        for (key, counts) in slots {
            values.removeAll(keepingCapacity: true)
            values += [.integer(key.slot), .text(key.task), .text(key.model), .integer(key.status), .text(key.code)]
            values += [
                .integer(counts.requests), .integer(counts.cacheHits), .integer(counts.inputTokens),
                .integer(counts.outputTokens), .integer(counts.costMicros),
            ]
            try connection.execute(slotsUpsert, values)
        }
        for (slot, histograms) in latency {
            values.removeAll(keepingCapacity: true)
            values.append(.integer(slot))
            for count in histograms.added.counts + histograms.upstream.counts { values.append(.integer(count)) }
            try connection.execute(latencyUpsert, values)
        }
    }

    private static let usageUpsert = RollupTables.upsertUsage(.sqlite, rows: 1)
    private static let plainUsageUpsert = RollupTables.upsertUsage(.sqlite, rows: 1, rollups: false)
    private static let slotsUpsert = RollupTables.upsertSlots(.sqlite, rows: 1)
    private static let latencyUpsert = RollupTables.upsertLatency(.sqlite, rows: 1)

    /// The UTC day (days since the Unix epoch) of an instant in milliseconds, rounded down.
    static func utcDay(ofMilliseconds milliseconds: Int64) -> Int64 {
        LedgerTotals.utcDay(ofMilliseconds: milliseconds)
    }
}
