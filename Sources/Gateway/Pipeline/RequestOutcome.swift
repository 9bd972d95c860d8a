import Access
import Upstream

/// How a request ended, decided by the finisher alone from what the route reported (or the
/// error it threw) and how the response ended; logs and metrics take its label, never a
/// string a handler made up.
enum RequestOutcome: Sendable, Equatable {
    /// Answered (for a stream: to its last event).
    case done
    /// Answered from the response cache, without an upstream call of its own.
    case cacheHit
    /// The client went away before its answer was complete (`499`).
    case cancelled
    /// Refused by a rate limit or quota (`429`).
    case refused(RefusalReason)
    /// Refused by a spending budget (`429 budget_exceeded`).
    case overBudget(BudgetScope)
    /// The request itself was wrong: validation, authentication, routing (`4xx`).
    case rejected
    /// The upstream failed.
    case failed(UpstreamFailure)
    /// A stream the gateway ended because a time limit passed.
    case streamTimeout
    /// A stream ended by the server's shutdown.
    case shutdown
    /// A gateway fault or a missing configuration (`500`).
    case internalError
    /// A retry answered with the first answer for its `Idempotency-Key`, without an upstream call.
    case replayed

    /// The value of the access log's `outcome` field.
    var label: String {
        switch self {
        case .done: return "done"
        case .cacheHit: return "cache_hit"
        case .cancelled: return "cancelled"
        case .refused: return "rate_limited"
        case .overBudget: return "budget_exceeded"
        case .rejected: return "rejected"
        case .failed(let failure): return failure.kind == .timeout ? "upstream_timeout" : "upstream_failure"
        case .streamTimeout: return "stream_timeout"
        case .shutdown: return "shutdown"
        case .internalError: return "internal_error"
        case .replayed: return "idempotent_replay"
        }
    }

    /// The outcome of a request answered with `error`: a refusal and an upstream failure
    /// carry their own.
    static func answered(with error: GatewayError) -> RequestOutcome {
        if let reason = error.refusal { return .refused(reason) }
        if let scope = error.budgetScope { return .overBudget(scope) }
        if let kind = error.upstreamKind { return .failed(UpstreamFailure(kind: kind)) }
        switch error.status.code {
        case 499: return .cancelled
        case 500...: return .internalError
        default: return .rejected
        }
    }
}
