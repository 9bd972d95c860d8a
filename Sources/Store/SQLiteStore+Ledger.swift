extension SQLiteStore {
    public func append(_ rows: [LedgerRow]) async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try Self.insert(rows, into: connection)
                for (key, total) in Self.usage(of: rows) {
                    try connection.execute(
                        """
                        INSERT INTO usage_daily (user_id, day, requests, input_tokens, output_tokens) VALUES (?, ?, ?, ?, ?)
                        ON CONFLICT (user_id, day) DO UPDATE SET requests = requests + excluded.requests,
                            input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens
                        """,
                        [.text(key.userID), .integer(key.day), .integer(total.requests), .integer(total.inputTokens), .integer(total.outputTokens)]
                    )
                }
                for (tokenID, lastUsed) in Self.lastUses(in: rows) {
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

    private struct UsageKey: Hashable {
        var userID: String
        var day: Int64
    }

    private struct UsageTotal {
        var requests = 0
        var inputTokens = 0
        var outputTokens = 0
    }

    /// The rows' use per identified caller and UTC day, added up before it is written: one
    /// upsert per caller and day instead of one per row. A cached answer costs no tokens.
    private static func usage(of rows: [LedgerRow]) -> [UsageKey: UsageTotal] {
        var totals: [UsageKey: UsageTotal] = [:]
        for row in rows {
            guard let userID = row.userID else { continue }
            let key = UsageKey(userID: userID, day: utcDay(ofMilliseconds: row.createdAtMilliseconds))
            totals[key, default: UsageTotal()].requests += 1
            guard !row.cacheHit else { continue }
            totals[key, default: UsageTotal()].inputTokens &+= max(0, row.inputTokens ?? 0)
            totals[key, default: UsageTotal()].outputTokens &+= max(0, row.outputTokens ?? 0)
        }
        return totals
    }

    /// Each store token's latest use among the rows.
    private static func lastUses(in rows: [LedgerRow]) -> [String: Int64] {
        var latest: [String: Int64] = [:]
        for row in rows {
            guard let tokenID = row.tokenID else { continue }
            latest[tokenID] = max(latest[tokenID] ?? .min, row.createdAtMilliseconds)
        }
        return latest
    }

    /// The UTC day (days since the Unix epoch) of an instant in milliseconds, rounded down.
    static func utcDay(ofMilliseconds milliseconds: Int64) -> Int64 {
        let (day, rest) = milliseconds.quotientAndRemainder(dividingBy: 86_400_000)
        return rest < 0 ? day - 1 : day
    }
}
