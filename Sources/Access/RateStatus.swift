/// What a client is told about its limits: the values of the `RateLimit-Limit`,
/// `RateLimit-Remaining` and `RateLimit-Reset` fields, and of `Retry-After` on a refusal.
///
/// Which limit the status speaks of is ``quota``:
///
/// - when a request is allowed, the per-minute limit if the plan has one, else the daily
///   token quota (a plan with neither gets no status, and no fields);
/// - when it is refused, the limit that refused it; a concurrency refusal speaks of the same
///   limit as an allowed request would (or of the concurrency limit when the plan has no
///   other), with `Retry-After: 1`.
package struct RateStatus: Sendable, Equatable {
    /// The limits a status can speak of.
    package enum Quota: Sendable, Hashable {
        /// Requests in any 60-second window; ``resetSeconds`` is when the window is empty.
        case requestsPerMinute
        /// Upstream tokens per UTC day; ``resetSeconds`` is the time to UTC midnight.
        case tokensPerDay
        /// Requests running at once; only when the plan limits nothing else.
        case concurrentRequests
    }

    /// Which limit this is.
    package var quota: Quota
    /// The limit: requests a minute, tokens a day or requests at once.
    package var limit: Int
    /// How much of it is left now, after the request this status answers.
    package var remaining: Int
    /// Seconds until the full limit is available again.
    package var resetSeconds: Int
    /// On a refusal, seconds until a retry can succeed (as far as this limit goes); `nil`
    /// when the request was allowed.
    package var retryAfterSeconds: Int?

    package init(quota: Quota, limit: Int, remaining: Int, resetSeconds: Int, retryAfterSeconds: Int? = nil) {
        self.quota = quota
        self.limit = limit
        self.remaining = remaining
        self.resetSeconds = resetSeconds
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The response header fields for this status, in order: `RateLimit-Limit`,
    /// `RateLimit-Remaining`, `RateLimit-Reset` and, on a refusal, `Retry-After`.
    package var headerFields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = [
            ("RateLimit-Limit", String(limit)),
            ("RateLimit-Remaining", String(remaining)),
            ("RateLimit-Reset", String(resetSeconds)),
        ]
        if let retryAfterSeconds { fields.append(("Retry-After", String(retryAfterSeconds))) }
        return fields
    }
}
