import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Whether a non-streaming call is tried again when the gateway is busy.
///
/// Streams are never retried: once `start` arrived the caller has seen part of an answer.
public struct RetryPolicy: Sendable, Hashable {
    /// Attempts in all, the first included (`1` means no retry).
    public var maxAttempts: Int
    /// The longest wait between attempts, whatever `Retry-After` says.
    public var maxDelay: Duration

    /// Never retry: a `429` or `503` is thrown at once.
    public static let none = RetryPolicy(maxAttempts: 1, maxDelay: .zero)

    /// Retry `429 rate_limited` and `503 upstream_busy` up to `maxAttempts` attempts in all,
    /// waiting `Retry-After` seconds (one second without it), never longer than `maxDelay`.
    public static func retryingBusy(maxAttempts: Int = 3, maxDelay: Duration = .seconds(10)) -> RetryPolicy {
        RetryPolicy(maxAttempts: max(1, maxAttempts), maxDelay: max(.zero, maxDelay))
    }

    /// A policy of the given limits.
    public init(maxAttempts: Int, maxDelay: Duration) {
        self.maxAttempts = max(1, maxAttempts)
        self.maxDelay = max(.zero, maxDelay)
    }

    /// How long to wait before attempt `attempt + 1` after a connection failed or was lost,
    /// or `nil` to give up: one second, doubled each time, never longer than `maxDelay`.
    /// Only for a call with an `Idempotency-Key`, whose retry cannot pay twice.
    func delay(afterTransportError error: URLError, attempt: Int) -> Duration? {
        let transient: Set<URLError.Code> = [
            .networkConnectionLost, .notConnectedToInternet, .timedOut, .cannotConnectToHost, .cannotFindHost,
        ]
        guard transient.contains(error.code), attempt < maxAttempts else { return nil }
        return min(.seconds(1 << min(attempt - 1, 10)), maxDelay)
    }

    /// How long to wait before attempt `attempt + 1` after `error`, or `nil` to give up.
    func delay(after error: TextGatewayError, attempt: Int) -> Duration? {
        guard error.isBusy, attempt < maxAttempts else { return nil }
        return min(.seconds(error.retryAfter ?? 1), maxDelay)
    }
}
