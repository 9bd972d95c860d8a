extension SQLiteStore {
    /// One `BEGIN IMMEDIATE` transaction: the read and the write that follows it happen under
    /// the file's write lock, so of two begins at once (in this process or another) the second
    /// reads the first's row.
    package func beginIdempotent(_ start: IdempotencyStart, nowMilliseconds: Int64) async throws(StoreError)
        -> IdempotencyBegin
    {
        guard
            case .begun(let begun) = try await applyIdempotent([.begin(start)], nowMilliseconds: nowMilliseconds).first
        else {
            throw StoreError(.other, message: "\(path): a begin without its result")
        }
        return begun
    }

    /// The replay count stays the row's own (0 since the begin), whatever `answer` carries.
    package func completeIdempotent(
        scope: String, key: String, owner: String, answer: StoredAnswer, expiresAtMilliseconds: Int64
    ) async throws(StoreError) -> Bool {
        let written = try await applyIdempotent(
            [
                .complete(
                    scope: scope, key: key, owner: owner, answer: answer, expiresAtMilliseconds: expiresAtMilliseconds)
            ], nowMilliseconds: 0
        )
        return written.first == .completed(true)
    }

    package func releaseIdempotent(scope: String, key: String, owner: String) async throws(StoreError) {
        _ = try await applyIdempotent([.release(scope: scope, key: key, owner: owner)], nowMilliseconds: 0)
    }

    package func noteIdempotentReplay(scope: String, key: String) async throws(StoreError) {
        _ = try await applyIdempotent([.replay(scope: scope, key: key)], nowMilliseconds: 0)
    }

    /// All of `writes` in one transaction on the writer: one commit (one write of the pages
    /// they touch) for however many requests' keys.
    package func applyIdempotent(_ writes: [IdempotencyWrite], nowMilliseconds: Int64) async throws(StoreError)
        -> [IdempotencyWritten]
    {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> [IdempotencyWritten] in
                var results: [IdempotencyWritten] = []
                results.reserveCapacity(writes.count)
                for write in writes {
                    results.append(try Self.apply(write, nowMilliseconds: nowMilliseconds, on: connection))
                }
                return results
            }
        }
    }

    private static func apply(_ write: IdempotencyWrite, nowMilliseconds: Int64, on connection: SQLiteConnection)
        throws(StoreError) -> IdempotencyWritten
    {
        switch write {
        case .lookup(let start):
            let row = try connection.queryFirst(
                "SELECT \(IdempotencyRow.columns) FROM idempotency_keys WHERE scope = ? AND idem_key = ?",
                [.text(start.scope), .text(start.key)]
            ) { Self.idempotencyRow(from: $0) }
            guard let row, !row.isFree(at: nowMilliseconds) else { return .begun(.started) }
            return .begun(row.outcome(for: start))
        case .keep(let start, let answer, let expiresAtMilliseconds):
            let changed = try connection.execute(
                """
                INSERT OR REPLACE INTO idempotency_keys
                    (scope, idem_key, fingerprint, request_id, owner, state, lease_until, created_at, replays,
                    expires_at, status, content_type, upstream, body, text, streamed)
                VALUES (?, ?, ?, ?, ?, 'completed', ?, ?, 0, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    .text(start.scope), .text(start.key), .blob(start.fingerprint), .text(start.requestID),
                    .text(start.owner),
                    .integer(start.leaseUntilMilliseconds), .integer(nowMilliseconds), .integer(expiresAtMilliseconds),
                    .integer(Int64(answer.status)), .text(answer.contentType), .text(answer.upstream),
                    .blob(answer.body), .text(answer.text),
                    .integer(answer.streamed ? 1 : 0),
                ]
            )
            return .completed(changed == 1)
        case .begin(let start):
            let row = try connection.queryFirst(
                "SELECT \(IdempotencyRow.columns) FROM idempotency_keys WHERE scope = ? AND idem_key = ?",
                [.text(start.scope), .text(start.key)]
            ) { Self.idempotencyRow(from: $0) }
            if let row, !row.isFree(at: nowMilliseconds) { return .begun(row.outcome(for: start)) }
            try connection.execute(
                """
                INSERT OR REPLACE INTO idempotency_keys
                    (scope, idem_key, fingerprint, request_id, owner, state, lease_until, created_at, replays)
                VALUES (?, ?, ?, ?, ?, 'running', ?, ?, 0)
                """,
                [
                    .text(start.scope), .text(start.key), .blob(start.fingerprint), .text(start.requestID),
                    .text(start.owner),
                    .integer(start.leaseUntilMilliseconds), .integer(nowMilliseconds),
                ]
            )
            return .begun(.started)
        case .complete(let scope, let key, let owner, let answer, let expiresAtMilliseconds):
            let changed = try connection.execute(
                """
                UPDATE idempotency_keys SET state = 'completed', expires_at = ?, status = ?, content_type = ?,
                    upstream = ?, body = ?, text = ?, streamed = ?
                WHERE scope = ? AND idem_key = ? AND state = 'running' AND owner = ?
                """,
                [
                    .integer(expiresAtMilliseconds), .integer(Int64(answer.status)), .text(answer.contentType),
                    .text(answer.upstream),
                    .blob(answer.body), .text(answer.text), .integer(answer.streamed ? 1 : 0),
                    .text(scope), .text(key), .text(owner),
                ]
            )
            return .completed(changed == 1)
        case .release(let scope, let key, let owner):
            try connection.execute(
                "DELETE FROM idempotency_keys WHERE scope = ? AND idem_key = ? AND state = 'running' AND owner = ?",
                [.text(scope), .text(key), .text(owner)]
            )
            return .done
        case .replay(let scope, let key):
            try connection.execute(
                """
                UPDATE idempotency_keys SET replays = replays + 1
                WHERE scope = ? AND idem_key = ? AND state = 'completed'
                """,
                [.text(scope), .text(key)]
            )
            return .done
        }
    }

    /// Two kinds of dead rows, each found by `idempotency_keys_by_expiry`: a running row has
    /// no expiry (the table's check holds it so).
    package func purgeExpiredIdempotent(nowMilliseconds: Int64) async throws(StoreError) -> Int {
        try await onPool { () throws(StoreError) -> Int in
            let answers = try self.deleteInBatches(
                """
                DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys
                    WHERE state = 'completed' AND expires_at <= ? LIMIT \(Self.deletionBatch))
                """,
                [.integer(nowMilliseconds)]
            )
            let leases = try self.deleteInBatches(
                """
                DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys
                    WHERE state = 'running' AND expires_at IS NULL AND lease_until <= ? LIMIT \(Self.deletionBatch))
                """,
                [.integer(nowMilliseconds)]
            )
            return answers + leases
        }
    }

    /// Found through the primary key's first column: only the caller's own keys are read.
    package func deleteKeptIdempotent(scopes: [String], requestID: String?) async throws(StoreError) -> Int {
        guard !scopes.isEmpty else { return 0 }
        let values = scopes.map { SQLiteValue.text($0) } + (requestID.map { [.text($0)] } ?? [])
        let condition =
            "scope IN (\(Array(repeating: "?", count: scopes.count).joined(separator: ", "))) AND state = 'completed'"
            + (requestID == nil ? "" : " AND request_id = ?")
        return try await onPool { () throws(StoreError) -> Int in
            try self.deleteInBatches(
                """
                DELETE FROM idempotency_keys WHERE rowid IN (SELECT rowid FROM idempotency_keys
                    WHERE \(condition) LIMIT \(Self.deletionBatch))
                """,
                values
            )
        }
    }

    private static func idempotencyRow(from row: borrowing SQLiteRow) -> IdempotencyRow {
        let completed = row.text(3) == "completed"
        return IdempotencyRow(
            fingerprint: row.blob(0), requestID: row.text(1), owner: row.text(2), completed: completed,
            leaseUntilMilliseconds: row.int64(4),
            expiresAtMilliseconds: row.optionalInt64(5),
            answer: completed
                ? StoredAnswer(
                    status: row.int(6), contentType: row.text(7), upstream: row.optionalText(8), body: row.blob(9),
                    text: row.optionalText(10),
                    streamed: row.bool(11), replays: row.int(12)
                ) : nil
        )
    }
}

extension SQLiteStore {
    /// Calls `body` with the scope and key of every answer kept (completed and unexpired at
    /// `nowMilliseconds`), in one read: a gateway that owns the store builds the filter that
    /// lets a new key run without a look in the store.
    package func forEachKeptIdempotencyKey(nowMilliseconds: Int64, _ body: @escaping @Sendable (String, String) -> Void)
        async throws(StoreError)
    {
        try await read { connection throws(StoreError) in
            try connection.query(
                "SELECT scope, idem_key FROM idempotency_keys WHERE state = 'completed' AND expires_at > ?",
                [.integer(nowMilliseconds)]
            ) { body($0.text(0), $0.text(1)) }
        }
    }
}
