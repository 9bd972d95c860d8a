/// `REDIS_FAILURE_MODE`: what the gateway does while Redis cannot be reached.
package enum RedisFailureMode: String, Sendable, Equatable {
    /// Each instance limits with its own in-memory counts until Redis is back (the default):
    /// the service stays up, and a limit may be exceeded by up to the number of instances.
    case local
    /// Requests that need a limit are refused with `503 upstream_busy` until Redis is back.
    case closed
}
