/// Caller tokens kept in the store (`text-gateway tokens …`): only each token's SHA-256
/// digest, never the token.
package protocol TokenRepository: Sendable {
    /// Adds a token. Throws when its id or digest is taken.
    func insertToken(_ token: StoredToken) async throws(StoreError)
    /// Every token, revoked ones too, oldest first.
    func tokens() async throws(StoreError) -> [StoredToken]
    /// Marks the token `id` revoked at `atMilliseconds`; false when no unrevoked token has that id.
    func revokeToken(id: String, atMilliseconds: Int64) async throws(StoreError) -> Bool
    /// The tokens not revoked.
    func activeTokens() async throws(StoreError) -> [StoredToken]
    /// A number that changes whenever a token is added or revoked (by any process on the
    /// store): a gateway polls it and reloads its tokens when it moved.
    func tokenGeneration() async throws(StoreError) -> Int64
}

/// A token as the store keeps it.
package struct StoredToken: Sendable, Equatable, CustomStringConvertible {
    /// A short public id (`text-gateway tokens revoke <id>`).
    package var id: String
    /// The 32-byte SHA-256 digest of the token.
    package var digest: [UInt8]
    package var userID: String
    package var plan: String
    package var label: String?
    package var createdAtMilliseconds: Int64
    package var lastUsedAtMilliseconds: Int64?
    package var revokedAtMilliseconds: Int64?

    package init(
        id: String, digest: [UInt8], userID: String, plan: String, label: String?, createdAtMilliseconds: Int64,
        lastUsedAtMilliseconds: Int64? = nil, revokedAtMilliseconds: Int64? = nil
    ) {
        self.id = id
        self.digest = digest
        self.userID = userID
        self.plan = plan
        self.label = label
        self.createdAtMilliseconds = createdAtMilliseconds
        self.lastUsedAtMilliseconds = lastUsedAtMilliseconds
        self.revokedAtMilliseconds = revokedAtMilliseconds
    }

    /// Never the digest.
    package var description: String { "StoredToken(id: \(id), userID: \(userID), plan: \(plan))" }
}
