/// The middleware in front of a caller's routes, in this order: who the caller is
/// (``AuthenticationFeature``), then the caller's limits (``LimitsFeature``).
struct CallerFront: Sendable {
    private let authentication: AuthenticationFeature
    private let rateLimits: LimitsFeature
    /// `AUTH_REQUIRED`, or tokens configured.
    private let requiresTokens: Bool

    init(authentication: AuthenticationFeature, limits: LimitsFeature, requiresTokens: Bool) {
        self.authentication = authentication
        rateLimits = limits
        self.requiresTokens = requiresTokens
    }

    /// A request for one answer (`/api/process`, a job's submission): the caller, its limits,
    /// and its body read only as it was sent.
    var answer: [any Middleware] {
        [caller(required: requiresTokens)] + limits(.process) + [ContentEncodingMiddleware()]
    }

    /// A job's submission: as ``answer``, but outside the budgets, which each of the job's
    /// upstream calls reserves in for itself when it is made.
    var jobSubmission: [any Middleware] {
        [caller(required: requiresTokens)] + rateLimits.middleware(.process, budgets: false)
            + [ContentEncodingMiddleware()]
    }

    func caller(required: Bool, placeholderGuests: Bool = false) -> AuthMiddleware {
        authentication.caller(required: required, placeholderGuests: placeholderGuests)
    }

    func limits(_ cost: RequestCost) -> [any Middleware] {
        rateLimits.middleware(cost)
    }
}
