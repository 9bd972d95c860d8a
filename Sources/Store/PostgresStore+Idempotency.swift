import Postgres

/// At Read Committed, as the other write paths. A statement that waited on a row's lock
/// rechecks its own `WHERE` against the row's newest version, so every condition a write
/// depends on is in the statement that writes, not only in a subquery (whose rows come from
/// the snapshot it started with).
extension PostgresStore {
    /// One transaction of three statements, in one round trip:
    /// 1. the insert, which does nothing when the key has a row (waiting first for a
    ///    concurrent insert of the key to commit or roll back);
    /// 2. the row read `FOR UPDATE`, so that of several begins at once the others wait here
    ///    until this one commits, then read what it wrote;
    /// 3. the takeover of a dead row (an expired answer, an ended lease), which holds the
    ///    row's lock already.
    /// Started when 1 or 3 wrote; otherwise 2's row decides. A row deleted (released or
    /// purged) between 1 and 2 leaves nothing to decide on: the begin runs again.
    package func beginIdempotent(_ start: IdempotencyStart, nowMilliseconds: Int64) async throws(StoreError)
        -> IdempotencyBegin
    {
        let now = PostgresValue.int(Int(nowMilliseconds))
        let key: [PostgresValue] = [.text(start.scope), .text(start.key)]
        let fresh: [PostgresValue] = [
            .bytes(start.fingerprint), .text(start.requestID), .text(start.owner),
            .int(Int(start.leaseUntilMilliseconds)), now,
        ]
        for _ in 0..<5 {
            let results = try await transaction([
                PostgresQuery(
                    """
                    INSERT INTO idempotency_keys
                        (scope, idem_key, fingerprint, request_id, owner, state, lease_until, created_at, replays)
                    VALUES ($1, $2, $3, $4, $5, 'running', $6, $7, 0) ON CONFLICT (scope, idem_key) DO NOTHING
                    """,
                    key + fresh
                ),
                PostgresQuery(
                    """
                    SELECT \(IdempotencyRow.columns) FROM idempotency_keys
                    WHERE scope = $1 AND idem_key = $2 FOR UPDATE
                    """,
                    key),
                PostgresQuery(
                    """
                    UPDATE idempotency_keys SET fingerprint = $3, request_id = $4, owner = $5, state = 'running',
                        lease_until = $6, created_at = $7, expires_at = NULL, status = NULL, content_type = NULL,
                        upstream = NULL, body = NULL, text = NULL, streamed = NULL, replays = 0
                    WHERE scope = $1 AND idem_key = $2
                        AND ((state = 'completed' AND expires_at <= $7) OR (state = 'running' AND lease_until <= $7))
                    """,
                    key + fresh
                ),
            ])
            guard results.count == 3 else { break }
            if results[0].affectedRows == 1 || results[2].affectedRows == 1 { return .started }
            if let row = results[1].rows.first.map(Self.idempotencyRow(from:)) { return row.outcome(for: start) }
        }
        throw .idempotencyKeyChurn(store: name)
    }

    /// The replay count stays the row's own (0 since the begin), whatever `answer` carries.
    package func completeIdempotent(
        scope: String, key: String, owner: String, answer: StoredAnswer, expiresAtMilliseconds: Int64
    ) async throws(StoreError) -> Bool {
        try await query(
            """
            UPDATE idempotency_keys SET state = 'completed', expires_at = $1, status = $2, content_type = $3,
                upstream = $4, body = $5, text = $6, streamed = $7
            WHERE scope = $8 AND idem_key = $9 AND state = 'running' AND owner = $10
            """,
            [
                .int(Int(expiresAtMilliseconds)), .int(answer.status), .text(answer.contentType),
                answer.upstream.postgresValue, .bytes(answer.body),
                answer.text.postgresValue, .bool(answer.streamed), .text(scope), .text(key), .text(owner),
            ]
        ).affectedRows == 1
    }

    package func releaseIdempotent(scope: String, key: String, owner: String) async throws(StoreError) {
        try await query(
            "DELETE FROM idempotency_keys WHERE scope = $1 AND idem_key = $2 AND state = 'running' AND owner = $3",
            [.text(scope), .text(key), .text(owner)]
        )
    }

    package func noteIdempotentReplay(scope: String, key: String) async throws(StoreError) {
        try await query(
            """
            UPDATE idempotency_keys SET replays = replays + 1
            WHERE scope = $1 AND idem_key = $2 AND state = 'completed'
            """,
            [.text(scope), .text(key)]
        )
    }

    /// The outer `WHERE` repeats the subquery's condition: a row a begin took over while the
    /// delete waited on its lock is live again and must stay.
    package func purgeExpiredIdempotent(nowMilliseconds: Int64) async throws(StoreError) -> Int {
        let answers = try await deleteInBatches(
            """
            DELETE FROM idempotency_keys WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM idempotency_keys
                WHERE state = 'completed' AND expires_at <= $1 LIMIT \(Self.deletionBatch))
                AND state = 'completed' AND expires_at <= $1
            """,
            [.int(Int(nowMilliseconds))]
        )
        let leases = try await deleteInBatches(
            """
            DELETE FROM idempotency_keys WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM idempotency_keys
                WHERE state = 'running' AND expires_at IS NULL AND lease_until <= $1 LIMIT \(Self.deletionBatch))
                AND state = 'running' AND lease_until <= $1
            """,
            [.int(Int(nowMilliseconds))]
        )
        return answers + leases
    }

    /// Found through the primary key's first column: only the caller's own keys are read. The
    /// outer `WHERE` repeats the subquery's, as the purge's does: a row a begin took over
    /// while the delete waited is another request's now.
    package func deleteKeptIdempotent(scopes: [String], requestID: String?) async throws(StoreError) -> Int {
        guard !scopes.isEmpty else { return 0 }
        let parameters = scopes.map { PostgresValue.text($0) } + (requestID.map { [.text($0)] } ?? [])
        let condition =
            "scope IN (\(scopes.indices.map { "$\($0 + 1)" }.joined(separator: ", "))) AND state = 'completed'"
            + (requestID == nil ? "" : " AND request_id = $\(scopes.count + 1)")
        return try await deleteInBatches(
            """
            DELETE FROM idempotency_keys WHERE (scope, idem_key) IN (SELECT scope, idem_key FROM idempotency_keys
                WHERE \(condition) LIMIT \(Self.deletionBatch))
                AND \(condition)
            """,
            parameters
        )
    }

    private static func idempotencyRow(from row: PostgresRow) -> IdempotencyRow {
        let completed = row.string(3) == "completed"
        return IdempotencyRow(
            fingerprint: row[0] ?? [], requestID: row.string(1) ?? "", owner: row.string(2) ?? "", completed: completed,
            leaseUntilMilliseconds: Int64(row.int(4) ?? 0), expiresAtMilliseconds: row.int(5).map(Int64.init),
            answer: completed
                ? StoredAnswer(
                    status: row.int(6) ?? 0, contentType: row.string(7) ?? "", upstream: row.string(8),
                    body: row[9] ?? [], text: row.string(10),
                    streamed: row.bool(11) ?? false, replays: row.int(12) ?? 0
                ) : nil
        )
    }
}
