import Access
import Redis

/// `CACHE_BACKEND`: where `/api/process` answers are cached.
package enum CacheBackend: String, Sendable, Equatable {
    /// In this process only.
    case memory
    /// In Redis, shared by every instance (the default when `REDIS_URL` is set).
    case redis
}

extension GatewayConfiguration {
    /// Reads `REDIS_URL`, `REDIS_TIMEOUT_MS`, `REDIS_FAILURE_MODE` and `CACHE_BACKEND`.
    static func sharedState(
        environment: [String: String], value: (String) -> String?
    ) throws(ConfigurationError) -> (redis: RedisConfiguration?, failureMode: RedisFailureMode, cache: CacheBackend) {
        var trimmed = environment
        for name in ["REDIS_URL", "REDIS_TIMEOUT_MS"] { trimmed[name] = value(name) }
        let redis: RedisConfiguration?
        do {
            redis = try RedisConfiguration(environment: trimmed)
        } catch {
            throw ConfigurationError(error.message)
        }
        var failureMode = RedisFailureMode.local
        if let name = value("REDIS_FAILURE_MODE") {
            guard let mode = RedisFailureMode(rawValue: name.lowercased()) else {
                throw ConfigurationError("REDIS_FAILURE_MODE must be local or closed")
            }
            failureMode = mode
        }
        var cache: CacheBackend = redis == nil ? .memory : .redis
        if let name = value("CACHE_BACKEND") {
            guard let backend = CacheBackend(rawValue: name.lowercased()) else {
                throw ConfigurationError("CACHE_BACKEND must be memory or redis")
            }
            guard backend == .memory || redis != nil else {
                throw ConfigurationError("CACHE_BACKEND=redis needs REDIS_URL")
            }
            cache = backend
        }
        return (redis, failureMode, cache)
    }
}
