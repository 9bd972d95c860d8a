package import Telemetry

/// Decides whether a request may run under its plan, and keeps the counts that decide it.
///
/// The limiter is behind a protocol so a shared store (Redis) can replace the in-memory
/// one (``InMemoryRateLimiter``) when several gateways serve the same callers. A key is
/// whatever the gateway limits by: the user id of an authenticated caller, the client
/// address of a guest.
///
/// The time is a parameter: tests drive it, the gateway passes ``Instant/now``. Both calls
/// may throw when the limiter's store cannot be reached; the gateway then answers `503`.
package protocol RateLimiter: Sendable {
    /// Called before a request runs. On success returns a lease that MUST be finished when
    /// the request ends; a lease that never is expires by itself. A refused request is not
    /// counted against any limit.
    func acquire(key: String, plan: Plan, now: Instant) async throws -> RateDecision

    /// ``acquire(key:plan:now:)`` for a request expected to use up to `reservingTokens`: a
    /// limiter shared by several instances sets them aside against the daily quota until
    /// ``finish(lease:plan:tokens:now:)`` settles the real count, so calls running at once
    /// on other instances see them. A limiter that counts tokens only at the end ignores it.
    func acquire(key: String, plan: Plan, reservingTokens: Int, now: Instant) async throws -> RateDecision

    /// Ends a request: gives its lease back and charges the tokens it used against the
    /// plan's ``Plan/tokensPerDay`` for the UTC day of `now`. Returns the status the
    /// response reports, counting those tokens (nil when the plan reports none). Finishing
    /// a lease twice gives nothing back twice.
    func finish(lease: RateLease, plan: Plan, tokens: Int, now: Instant) async throws -> RateStatus?

    /// Charges `tokens` used outside any request (a job's answered item) to `key`'s day.
    func charge(key: String, plan: Plan, tokens: Int, now: Instant) async throws
}

extension RateLimiter {
    package func charge(key: String, plan: Plan, tokens: Int, now: Instant) async throws {
        _ = try await finish(lease: RateLease(key: key, id: 0), plan: plan, tokens: tokens, now: now)
    }

    package func acquire(key: String, plan: Plan, reservingTokens: Int, now: Instant) async throws -> RateDecision {
        try await acquire(key: key, plan: plan, now: now)
    }
}
