import Postgres

extension PostgresStore {
    /// How many rows one deleting statement removes at most, so a large deletion never holds
    /// row locks (and the ledger writer's usage upserts) for long.
    static let deletionBatch = 5_000

    package func history(userID: String, limit: Int, before cursor: HistoryCursor?) async throws(StoreError)
        -> HistoryPage
    {
        let limit = min(max(limit, 1), 100)
        let from = "SELECT \(RequestsTable.selection) FROM requests WHERE user_id = $1"
        let result: PostgresResult
        if let cursor {
            result = try await query(
                from + " AND seq < $2 ORDER BY seq DESC LIMIT $3",
                [.text(userID), .int(Int(cursor.sequence)), .int(limit)])
        } else {
            result = try await query(from + " ORDER BY seq DESC LIMIT $2", [.text(userID), .int(limit)])
        }
        let items = result.rows.map(RequestsTable.item(from:))
        let next = items.count == limit ? items.last.map { HistoryCursor(sequence: $0.sequence) } : nil
        return HistoryPage(items: items, nextCursor: next)
    }

    package func historyItem(userID: String, id: String) async throws(StoreError) -> HistoryItem? {
        try await query(
            """
            SELECT \(RequestsTable.selection) FROM requests
            WHERE request_id = $1 AND user_id = $2 ORDER BY seq DESC LIMIT 1
            """,
            [.text(id), .text(userID)]
        ).rows.first.map(RequestsTable.item(from:))
    }

    package func deleteHistoryItem(userID: String, id: String) async throws(StoreError) -> Bool {
        try await query("DELETE FROM requests WHERE request_id = $1 AND user_id = $2", [.text(id), .text(userID)])
            .affectedRows > 0
    }

    package func deleteHistory(userID: String) async throws(StoreError) -> Int {
        try await deleteInBatches(
            """
            DELETE FROM requests
            WHERE seq IN (SELECT seq FROM requests WHERE user_id = $1 LIMIT \(Self.deletionBatch))
            """,
            [.text(userID)]
        )
    }

    /// Runs `sql`, a `DELETE` of at most `batch` rows, until it deletes fewer; each run
    /// commits on its own. Returns the rows deleted.
    func deleteInBatches(_ sql: String, _ parameters: [PostgresValue], batch: Int = deletionBatch)
        async throws(StoreError) -> Int
    {
        var total = 0
        while true {
            let deleted = try await query(sql, parameters).affectedRows
            total += deleted
            if deleted < batch { return total }
        }
    }
}
