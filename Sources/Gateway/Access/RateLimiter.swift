/// Decides whether a request may run under its plan, and keeps the counts that decide it.
///
/// The limiter is behind a protocol so a shared store (Redis) can replace the in-memory
/// one (``InMemoryRateLimiter``) when several gateways serve the same callers. A key is
/// whatever the gateway limits by: the user id of an authenticated caller, the client
/// address of a guest.
///
/// The time is a parameter: tests drive it, the gateway passes ``Instant/now``.
public protocol RateLimiter: Sendable {
    /// Called before a request runs. On success returns a lease that MUST be released when
    /// the request ends. A refused request is not counted against any limit.
    func acquire(key: String, plan: Plan, now: Instant) async -> RateDecision

    /// Records tokens used by a finished upstream call (counts against ``Plan/tokensPerDay``
    /// for the UTC day of `now`).
    func record(tokens: Int, key: String, plan: Plan, now: Instant) async

    /// Gives back a lease from ``acquire(key:plan:now:)``. Releasing a lease twice is harmless.
    func release(_ lease: RateLease) async
}
