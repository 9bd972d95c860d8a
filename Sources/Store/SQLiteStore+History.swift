extension SQLiteStore {
    package func history(userID: String, limit: Int, before cursor: HistoryCursor?) async throws(StoreError)
        -> HistoryPage
    {
        let limit = min(max(limit, 1), 100)
        return try await read { connection throws(StoreError) in
            var items: [HistoryItem] = []
            let from = "SELECT \(RequestsTable.selection) FROM requests WHERE user_id = ?"
            if let cursor {
                try connection.query(
                    from + " AND seq < ? ORDER BY seq DESC LIMIT ?",
                    [.text(userID), .integer(cursor.sequence), .integer(limit)]
                ) {
                    items.append(RequestsTable.item(from: $0))
                }
            } else {
                try connection.query(from + " ORDER BY seq DESC LIMIT ?", [.text(userID), .integer(limit)]) {
                    items.append(RequestsTable.item(from: $0))
                }
            }
            let next = items.count == limit ? items.last.map { HistoryCursor(sequence: $0.sequence) } : nil
            return HistoryPage(items: items, nextCursor: next)
        }
    }

    package func historyItem(userID: String, id: String) async throws(StoreError) -> HistoryItem? {
        try await read { connection throws(StoreError) in
            try connection.queryFirst(
                """
                SELECT \(RequestsTable.selection) FROM requests
                WHERE request_id = ? AND user_id = ? ORDER BY seq DESC LIMIT 1
                """,
                [.text(id), .text(userID)]
            ) { RequestsTable.item(from: $0) }
        }
    }

    package func deleteHistoryItem(userID: String, id: String) async throws(StoreError) -> Bool {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try connection.execute(
                    "DELETE FROM requests WHERE request_id = ? AND user_id = ?",
                    [.text(id), .text(userID)]
                ) > 0
            }
        }
    }

    package func deleteHistory(userID: String) async throws(StoreError) -> Int {
        try await onPool { () throws(StoreError) -> Int in
            try self.deleteInBatches(
                """
                DELETE FROM requests
                WHERE seq IN (SELECT seq FROM requests WHERE user_id = ? LIMIT \(Self.deletionBatch))
                """,
                [.text(userID)]
            )
        }
    }

    /// How many rows one deleting transaction removes at most, so a large deletion never holds
    /// the write lock (and the ledger writer) for long.
    static let deletionBatch = 5_000

    /// Runs `sql`, a `DELETE` of at most `batch` rows, in transactions of its own until it
    /// deletes fewer; the writer is let go between them. Returns the rows deleted.
    func deleteInBatches(_ sql: String, _ values: [SQLiteValue], batch: Int = deletionBatch) throws(StoreError) -> Int {
        var total = 0
        while true {
            let deleted = try writer.withConnection { connection throws(StoreError) in
                try connection.transaction { () throws(StoreError) in try connection.execute(sql, values) }
            }
            total += deleted
            if deleted < batch { return total }
        }
    }
}
