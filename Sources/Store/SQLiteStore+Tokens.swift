extension SQLiteStore {
    package func insertToken(_ token: StoredToken) async throws(StoreError) {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) -> Void in
                try connection.execute(
                    """
                    INSERT INTO tokens (id, digest, user_id, plan, label, created_at, last_used_at, revoked_at)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                    """,
                    [
                        .text(token.id), .blob(token.digest), .text(token.userID), .text(token.plan),
                        .text(token.label),
                        .integer(token.createdAtMilliseconds), .integer(token.lastUsedAtMilliseconds),
                        .integer(token.revokedAtMilliseconds),
                    ]
                )
            }
        }
    }

    package func tokens() async throws(StoreError) -> [StoredToken] {
        try await tokens(where: "1")
    }

    package func revokeToken(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool {
        try await write { connection throws(StoreError) in
            try connection.transaction { () throws(StoreError) in
                try connection.execute(
                    "UPDATE tokens SET revoked_at = ? WHERE id = ? AND revoked_at IS NULL",
                    [.integer(atMilliseconds), .text(id)]
                ) > 0
            }
        }
    }

    package func activeTokens() async throws(StoreError) -> [StoredToken] {
        try await tokens(where: "revoked_at IS NULL")
    }

    package func tokenGeneration() async throws(StoreError) -> Int64 {
        try await read { connection throws(StoreError) in
            try connection.queryFirst("SELECT value FROM store_meta WHERE key = 'token_generation'") { $0.int64(0) }
                ?? 0
        }
    }

    private func tokens(where condition: String) async throws(StoreError) -> [StoredToken] {
        try await read { connection throws(StoreError) in
            var tokens: [StoredToken] = []
            try connection.query(
                """
                SELECT id, digest, user_id, plan, label, created_at, last_used_at, revoked_at FROM tokens
                WHERE \(condition) ORDER BY created_at, id
                """
            ) {
                tokens.append(
                    StoredToken(
                        id: $0.text(0), digest: $0.blob(1), userID: $0.text(2), plan: $0.text(3),
                        label: $0.optionalText(4),
                        createdAtMilliseconds: $0.int64(5), lastUsedAtMilliseconds: $0.optionalInt64(6),
                        revokedAtMilliseconds: $0.optionalInt64(7)
                    )
                )
            }
            return tokens
        }
    }
}
