import Crypto

/// How a caller's key (a user id, an address) stands in a Redis key: the first 16 bytes of its
/// SHA-256 in hex, so that no id or address reaches Redis and two keys never share a counter
/// by a common beginning. The rate limiter's and the budgets' keys both use it.
enum RedisKeyDigest {
    static func of(_ key: String) -> String {
        SHA256.hexString(Array(SHA256.hash(key.utf8).prefix(16)))
    }
}
