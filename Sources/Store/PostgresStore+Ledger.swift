import Postgres

/// Appends, each batch exactly once.
///
/// A commit's answer can be lost (the connection drops after the server committed): the
/// writer then sees a transient error and sends the rows again, and a plain insert would
/// store them twice. Request ids cannot be the key, since a client may repeat its own; so
/// every transaction first inserts a fresh batch id into `ledger_batches` (its primary key).
/// After a failed append the store remembers its batches and ids, and when the writer sends
/// the same rows again (it always resends the failed rows first, in order) they go under the
/// same ids. Then either the first statement finds the id taken — the batch committed before,
/// nothing of this transaction is kept and the batch counts as done — or the batch commits
/// now. A first attempt still running on the server cannot slip past: the second insert of
/// its id waits on its row lock until it committed or rolled back.
///
/// Left out on purpose: after a failure that repeats (a constraint), the writer retries row
/// by row; those rows go under new ids, so a batch whose commit's answer was lost just before
/// is stored again. That takes a lost answer followed by a rejected row.
extension PostgresStore {
    /// Rows committed (or to be) under one batch id.
    struct LedgerBatch: Sendable {
        let id: String
        let rows: ArraySlice<LedgerRow>
    }

    package func append(_ rows: [LedgerRow]) async throws(StoreError) {
        guard !rows.isEmpty else { return }
        let batches = unresolved.withLock { remembered -> [LedgerBatch] in
            var batches: [LedgerBatch] = []
            var offset = rows.startIndex
            for batch in remembered {
                guard rows[offset...].starts(with: batch.rows) else { break }
                batches.append(batch)
                offset += batch.rows.count
            }
            if offset < rows.endIndex { batches.append(LedgerBatch(id: Self.newBatchID(), rows: rows[offset...])) }
            remembered = batches
            return batches
        }
        for batch in batches {
            try await commit(batch)
        }
        unresolved.withLock { $0 = [] }
    }

    private func commit(_ batch: LedgerBatch) async throws(StoreError) {
        do {
            _ = try await client.transaction(Self.queries(for: batch, rollups: rollupsEnabled))
        } catch  where error.condition == .uniqueViolation && error.query?.hasPrefix(Self.insertBatch) == true {
            return
        } catch {
            throw StoreError(postgres: error, store: name)
        }
    }

    private static let insertBatch = "INSERT INTO ledger_batches"

    /// The batch's id, its rows in multi-row inserts, its usage per caller and day as upserts,
    /// its tokens' last uses; each statement under the protocol's parameter limit.
    static func queries(for batch: LedgerBatch, rollups: Bool = true) -> [PostgresQuery] {
        var queries = [PostgresQuery(insertBatch + " (id) VALUES ($1)", [.text(batch.id)])]

        let rowsPerInsert = PostgresQuery.maxParameters / RequestsTable.columnCount
        for chunk in chunks(Array(batch.rows), of: rowsPerInsert) {
            var values: [PostgresValue] = []
            values.reserveCapacity(chunk.count * RequestsTable.columnCount)
            for row in chunk { RequestsTable.values(of: row, into: &values) }
            queries.append(
                PostgresQuery(
                    "INSERT INTO requests (\(RequestsTable.columns)) VALUES "
                        + placeholders(rows: chunk.count, columns: RequestsTable.columnCount),
                    values
                ))
        }

        let usage = LedgerTotals.usage(of: batch.rows).sorted {
            ($0.key.userID, $0.key.day) < ($1.key.userID, $1.key.day)
        }
        let usageColumns = rollups ? 10 : 6
        for chunk in chunks(usage, of: PostgresQuery.maxParameters / usageColumns) {
            var values: [PostgresValue] = []
            values.reserveCapacity(chunk.count * usageColumns)
            for (key, total) in chunk {
                values += [
                    .text(key.userID), .int(Int(key.day)), .int(total.requests), .int(total.inputTokens),
                    .int(total.outputTokens), .int(Int(total.costMicros)),
                ]
                if rollups {
                    values += [
                        .int(total.cacheHits), .int(total.errors), .int(Int(total.lastSeen)), total.plan.postgresValue,
                    ]
                }
            }
            // Each (user, day) once per statement: an upsert may not touch a row twice.
            queries.append(
                PostgresQuery(RollupTables.upsertUsage(.postgres, rows: chunk.count, rollups: rollups), values))
        }

        if rollups { queries += rollupQueries(for: batch.rows) }

        let lastUses = LedgerTotals.lastUses(in: batch.rows).sorted { $0.key < $1.key }
        for chunk in chunks(lastUses, of: PostgresQuery.maxParameters / 2) {
            var values: [PostgresValue] = []
            for (tokenID, lastUsed) in chunk { values += [.text(tokenID), .int(Int(lastUsed))] }
            // Only forward, and a token already further on is not written at all.
            queries.append(
                PostgresQuery(
                    """
                    UPDATE tokens SET last_used_at = v.at
                    FROM (VALUES \(placeholders(rows: chunk.count, columns: 2))) AS v (id, at)
                    WHERE tokens.id = v.id AND (tokens.last_used_at IS NULL OR tokens.last_used_at < v.at)
                    """,
                    values
                ))
        }
        return queries
    }

    /// The roll-ups' upserts, as multi-row statements; keys sorted, so two gateways' batches
    /// lock the rows they share in the same order and cannot deadlock. Each key once per
    /// statement: an upsert may not touch a row twice.
    private static func rollupQueries(for rows: ArraySlice<LedgerRow>) -> [PostgresQuery] {
        var queries: [PostgresQuery] = []
        let (slots, latency) = RollupTables.aggregate(rows)
        let columns = RollupTables.slotColumns.count
        for chunk in chunks(slots.sorted { $0.key < $1.key }, of: PostgresQuery.maxParameters / columns) {
            var values: [PostgresValue] = []
            values.reserveCapacity(chunk.count * columns)
            for (key, counts) in chunk {
                values += [.int(Int(key.slot)), .text(key.task), .text(key.model), .int(key.status), .text(key.code)]
                values += [
                    .int(counts.requests), .int(counts.cacheHits), .int(counts.inputTokens), .int(counts.outputTokens),
                    .int(Int(counts.costMicros)),
                ]
            }
            queries.append(PostgresQuery(RollupTables.upsertSlots(.postgres, rows: chunk.count), values))
        }
        let width = RollupTables.latencyColumns.count
        for chunk in chunks(latency.sorted { $0.key < $1.key }, of: PostgresQuery.maxParameters / width) {
            var values: [PostgresValue] = []
            values.reserveCapacity(chunk.count * width)
            for (slot, histograms) in chunk {
                values.append(.int(Int(slot)))
                for count in histograms.added.counts + histograms.upstream.counts { values.append(.int(count)) }
            }
            queries.append(PostgresQuery(RollupTables.upsertLatency(.postgres, rows: chunk.count), values))
        }
        return queries
    }

    private static func chunks<T>(_ items: [T], of size: Int) -> [ArraySlice<T>] {
        stride(from: 0, to: items.count, by: size).map { items[$0..<min($0 + size, items.count)] }
    }

    /// A random version-4 UUID in its text form.
    static func newBatchID() -> String {
        var generator = SystemRandomNumberGenerator()
        var bytes = (0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }
        bytes[6] = bytes[6] & 0x0F | 0x40
        bytes[8] = bytes[8] & 0x3F | 0x80
        let hex = bytes.map { byte in
            let text = String(byte, radix: 16)
            return byte < 16 ? "0" + text : text
        }
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { hex[$0].joined() }.joined(separator: "-")
    }
}
