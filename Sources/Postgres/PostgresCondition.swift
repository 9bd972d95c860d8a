/// A server error's SQLSTATE as a condition the code can switch over (PostgreSQL's
/// Appendix A). Only the ones callers act on are named; the rest are ``other(_:)``.
package enum PostgresCondition: Sendable, Hashable {
    /// 23505: a row with the same key exists.
    case uniqueViolation
    /// 23503
    case foreignKeyViolation
    /// 23502
    case notNullViolation
    /// 23514
    case checkViolation
    /// 40001: the transaction must be retried.
    case serializationFailure
    /// 40P01: the transaction must be retried.
    case deadlockDetected
    /// 57014: cancelled, by our timeout or by an operator.
    case queryCanceled
    /// 57P01, 57P02, 57P03: the server is shutting down or not yet accepting connections.
    case serverUnavailable
    /// 42P01
    case undefinedTable
    /// 42601
    case syntaxError
    /// 28000, 28P01: the server refused the credentials.
    case authenticationFailed
    /// 53xxx: out of disk, memory or connections.
    case insufficientResources
    /// 08xxx: a connection exception the server reported.
    case connectionException
    /// Any other SQLSTATE.
    case other(String)

    package init(sqlState: String) {
        switch sqlState {
        case "23505": self = .uniqueViolation
        case "23503": self = .foreignKeyViolation
        case "23502": self = .notNullViolation
        case "23514": self = .checkViolation
        case "40001": self = .serializationFailure
        case "40P01": self = .deadlockDetected
        case "57014": self = .queryCanceled
        case "57P01", "57P02", "57P03": self = .serverUnavailable
        case "42P01": self = .undefinedTable
        case "42601": self = .syntaxError
        case "28000", "28P01": self = .authenticationFailed
        default:
            if sqlState.hasPrefix("53") {
                self = .insufficientResources
            } else if sqlState.hasPrefix("08") {
                self = .connectionException
            } else {
                self = .other(sqlState)
            }
        }
    }

    /// Whether trying again later may succeed.
    package var isTransient: Bool {
        switch self {
        case .serializationFailure, .deadlockDetected, .serverUnavailable, .insufficientResources, .connectionException:
            true
        default: false
        }
    }
}
