/// The answer of ``RateLimiter/acquire(key:plan:now:)``.
package enum RateDecision: Sendable {
    /// The request may run. The lease must be released when it ends; the status is `nil`
    /// when the plan has neither a per-minute nor a daily limit to report.
    case allowed(RateLease, RateStatus?)
    /// The request must be answered `429 rate_limited` with the status's `Retry-After`.
    /// Nothing was counted for it.
    case refused(RateStatus, reason: RefusalReason)

    /// The lease of an allowed request.
    package var lease: RateLease? {
        if case .allowed(let lease, _) = self { return lease }
        return nil
    }

    /// The status to report, allowed or refused.
    package var status: RateStatus? {
        switch self {
        case .allowed(_, let status): status
        case .refused(let status, _): status
        }
    }
}
