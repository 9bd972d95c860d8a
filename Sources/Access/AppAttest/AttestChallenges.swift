package import Redis
package import Store

/// Where App Attest challenges wait for their one use, seen by every instance.
package protocol AttestChallenges: Sendable {
    /// Keeps `challenge` for `lifetimeMilliseconds` from `nowMilliseconds`.
    func issue(_ challenge: String, nowMilliseconds: Int64, lifetimeMilliseconds: Int64) async throws
    /// Whether `challenge` was issued, unused and unexpired; it can never be used again.
    func consume(_ challenge: String, nowMilliseconds: Int64) async throws -> Bool
}

/// Challenges in the store's table.
package struct StoreAttestChallenges: AttestChallenges {
    let repository: any DeviceRepository

    package init(repository: any DeviceRepository) {
        self.repository = repository
    }

    package func issue(_ challenge: String, nowMilliseconds: Int64, lifetimeMilliseconds: Int64) async throws {
        try await repository.insertChallenge(challenge, expiresAtMilliseconds: nowMilliseconds + lifetimeMilliseconds)
    }

    package func consume(_ challenge: String, nowMilliseconds: Int64) async throws -> Bool {
        try await repository.consumeChallenge(challenge, nowMilliseconds: nowMilliseconds)
    }
}

/// Challenges in Redis, when the instances share one: a key that expires by itself, taken
/// with `GETDEL` so that of two uses only one finds it.
package struct RedisAttestChallenges: AttestChallenges {
    let client: RedisClient

    package init(client: RedisClient) {
        self.client = client
    }

    static func key(_ challenge: String) -> String { "textgateway:attest:challenge:" + challenge }

    package func issue(_ challenge: String, nowMilliseconds: Int64, lifetimeMilliseconds: Int64) async throws {
        // The value is the expiry by the gateway's clock, checked again at use: Redis's own
        // expiry only frees the memory.
        let reply = try await client.send(
            "SET", RedisArgument(Self.key(challenge)), RedisArgument(nowMilliseconds + lifetimeMilliseconds), "PX",
            RedisArgument(lifetimeMilliseconds), "NX"
        )
        if case .error(let message) = reply { throw RedisError(.server, message) }
    }

    package func consume(_ challenge: String, nowMilliseconds: Int64) async throws -> Bool {
        let reply = try await client.send("GETDEL", RedisArgument(Self.key(challenge)))
        switch reply {
        case .bulkString(let bytes?):
            guard let expires = Int64(String(decoding: bytes, as: UTF8.self)) else { return false }
            return expires > nowMilliseconds
        case .error(let message):
            throw RedisError(.server, message)
        default:
            return false
        }
    }
}
