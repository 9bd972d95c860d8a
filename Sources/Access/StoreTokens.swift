package import Store
import Synchronization

/// The caller tokens the store holds (`text-gateway tokens create`), kept in memory and
/// reloaded when the store's token generation moves, so a token made or revoked by the
/// command line counts in a running gateway within one poll.
///
/// Unlike the configured ``TokenStore``, these are looked up in a dictionary keyed by the
/// token's SHA-256 digest: a store token is 32 random bytes, so how fast a lookup answers
/// for a guessed digest tells nothing about any real token (finding a token from its digest
/// is a preimage attack), and a gateway may hold many thousands of them.
package final class StoreTokens: Sendable {
    private struct Snapshot {
        var generation: Int64 = .min
        var byDigest: [[UInt8]: StoredToken] = [:]
    }

    private let snapshot = Mutex(Snapshot())
    let repository: any TokenRepository

    package init(repository: any TokenRepository) {
        self.repository = repository
    }

    /// The caller whose store token has `digest`, or nil.
    package func caller(digest: [UInt8]) -> Caller? {
        snapshot.withLock { $0.byDigest[digest] }.map { Caller(userID: $0.userID, plan: $0.plan, tokenID: $0.id) }
    }

    /// How many tokens are active now.
    package var count: Int { snapshot.withLock { $0.byDigest.count } }

    /// Reloads the tokens when the store's generation moved since the last load; returns
    /// whether it reloaded. The generation is read first, so a change made while loading is
    /// seen at the next poll.
    @discardableResult
    package func refresh() async throws(StoreError) -> Bool {
        let generation = try await repository.tokenGeneration()
        guard generation != snapshot.withLock({ $0.generation }) else { return false }
        let tokens = try await repository.activeTokens()
        var byDigest: [[UInt8]: StoredToken] = [:]
        byDigest.reserveCapacity(tokens.count)
        for token in tokens { byDigest[token.digest] = token }
        snapshot.withLock { $0 = Snapshot(generation: generation, byDigest: byDigest) }
        return true
    }
}
