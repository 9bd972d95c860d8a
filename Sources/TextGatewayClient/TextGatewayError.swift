/// An error the gateway answered with: its HTTP status, the stable `code` and the message
/// meant for the user (Persian unless the gateway's operator chose otherwise).
///
/// Transport failures (no connection, timeout, cancellation) are not this type: they stay
/// the `URLError` that `URLSession` throws.
public struct TextGatewayError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status (`400`, `429`, `503`, …); inside an event stream, the event's `status`,
    /// or `0` when the event carries none (a job's `error` event).
    public var status: Int
    /// The machine-readable code, such as `text_too_short` or `rate_limited`; `http_<status>`
    /// when the body was not the gateway's error JSON (a proxy's page).
    public var code: String
    /// The human message to show as it is.
    public var message: String
    /// The request's id, from the body or the `X-Request-Id` header.
    public var requestId: String?
    /// Seconds to wait before trying again, from `Retry-After` (`429`, `503`): its seconds, or
    /// the time until its HTTP-date.
    public var retryAfter: Int?
    /// Whether the gateway refused the bearer token that came (`401` with `WWW-Authenticate:
    /// Bearer error="invalid_token"`): a sign-in that expired, a revoked token, a device
    /// session that ended. Asking again with the same token will not help.
    public var isTokenRefused: Bool
    /// Why a device's registration or session was refused (`401` from `/api/attest/…`):
    /// `challenge` (expired or used: a new one helps), `unknown_device` (the key is not
    /// registered, or was revoked), or a reason the device cannot change (`app_id`, `boot`, …).
    public var attestError: String?

    /// An error of the given parts.
    public init(
        status: Int, code: String, message: String, requestId: String? = nil, retryAfter: Int? = nil,
        isTokenRefused: Bool = false, attestError: String? = nil
    ) {
        self.status = status
        self.code = code
        self.message = message
        self.requestId = requestId
        self.retryAfter = retryAfter
        self.isTokenRefused = isTokenRefused
        self.attestError = attestError
    }

    /// `status code: message`.
    public var description: String { "\(status) \(code): \(message)" }

    /// Whether a later attempt may succeed: `429` and `503`.
    /// `429`, `503`, or `409 idempotency_in_progress` (the call's first attempt is still
    /// being answered on another instance).
    public var isBusy: Bool { status == 429 || status == 503 || code == "idempotency_in_progress" }
}

/// The gateway's error JSON: `{error, reason, message, code, requestId}`, plus `status` in
/// an event stream.
struct ErrorWire: Decodable {
    var reason: String?
    var message: String?
    var code: String?
    var requestId: String?
    var status: Int?
    var attestError: String?
}
