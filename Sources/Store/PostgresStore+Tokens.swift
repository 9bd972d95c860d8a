import Postgres

extension PostgresStore {
    /// The generation moves by trigger, in the same transaction as the insert.
    package func insertToken(_ token: StoredToken) async throws(StoreError) {
        try await query(
            """
            INSERT INTO tokens (id, digest, user_id, plan, label, created_at, last_used_at, revoked_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """,
            [
                .text(token.id), .bytes(token.digest), .text(token.userID), .text(token.plan),
                token.label.postgresValue,
                .int(Int(token.createdAtMilliseconds)), token.lastUsedAtMilliseconds.map { .int(Int($0)) } ?? .null,
                token.revokedAtMilliseconds.map { .int(Int($0)) } ?? .null,
            ]
        )
    }

    package func tokens() async throws(StoreError) -> [StoredToken] {
        try await tokens(where: "true")
    }

    package func revokeToken(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool {
        try await query(
            "UPDATE tokens SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL",
            [.int(Int(atMilliseconds)), .text(id)]
        ).affectedRows > 0
    }

    package func activeTokens() async throws(StoreError) -> [StoredToken] {
        try await tokens(where: "revoked_at IS NULL")
    }

    package func tokenGeneration() async throws(StoreError) -> Int64 {
        Int64(try await query("SELECT value FROM store_meta WHERE key = 'token_generation'").rows.first?.int(0) ?? 0)
    }

    /// Ids in byte order (`COLLATE "C"`), as SQLite orders them.
    private func tokens(where condition: String) async throws(StoreError) -> [StoredToken] {
        try await query(
            """
            SELECT id, digest, user_id, plan, label, created_at, last_used_at, revoked_at FROM tokens
            WHERE \(condition) ORDER BY created_at, id COLLATE "C"
            """
        ).rows.map {
            StoredToken(
                id: $0.string(0) ?? "", digest: $0[1] ?? [], userID: $0.string(2) ?? "", plan: $0.string(3) ?? "",
                label: $0.string(4),
                createdAtMilliseconds: Int64($0.int(5) ?? 0), lastUsedAtMilliseconds: $0.int(6).map(Int64.init),
                revokedAtMilliseconds: $0.int(7).map(Int64.init)
            )
        }
    }
}
