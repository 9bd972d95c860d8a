extension SQLiteStore {
    public func append(_ rows: [LedgerRow]) async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try Self.insert(rows, into: connection)
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

    /// The UTC day (days since the Unix epoch) of an instant in milliseconds, rounded down.
    static func utcDay(ofMilliseconds milliseconds: Int64) -> Int64 {
        LedgerTotals.utcDay(ofMilliseconds: milliseconds)
    }
}
