/// Which limit refused a request.
package enum RefusalReason: Sendable, Hashable, CustomStringConvertible {
    /// The plan's ``Plan/requestsPerMinute`` are used up in the last 60 seconds.
    case requestsPerMinute
    /// The plan's ``Plan/concurrentRequests`` are all running.
    case concurrency
    /// The plan's ``Plan/tokensPerDay`` are used up for this UTC day.
    case dailyTokens

    /// A stable name for logs and metrics: `requests_per_minute`, `concurrency`, `daily_tokens`.
    package var description: String {
        switch self {
        case .requestsPerMinute: "requests_per_minute"
        case .concurrency: "concurrency"
        case .dailyTokens: "daily_tokens"
        }
    }
}
