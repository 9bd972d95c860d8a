import Access
import HTTPServer
import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// The console's lock: every `/api/admin/…` call needs `Authorization: Bearer <ADMIN_TOKEN>`,
/// compared in constant time. A caller token opens nothing here, and the admin token is no
/// caller anywhere else: the routes behind it have no limits and leave no rows.
///
/// Wrong tokens are counted per client address (``AdminLockout``): past
/// `ADMIN_FAILURES_PER_MINUTE` of them, the address's admin calls are `429` with
/// `Retry-After` for a minute, whatever token they bring. A call without a token guesses
/// nothing and is not counted.
struct AdminAccess: Middleware {
    let token: String
    let lockout: AdminLockout
    /// A client's address as its key (behind trusted proxies, an IPv6 one by its prefix).
    let clients: ClientAddressKey
    let clock: @Sendable () -> Instant

    func handle(
        _ request: HTTPRequest, context: RequestContext, report: inout RouteReport, next: @escaping RouteResponder
    ) async throws -> RouteAnswer {
        let address = clients.key(for: request)
        let now = clock()
        if let seconds = lockout.retryAfter(address, now: now) {
            throw GatewayError.adminLockedOut(retryAfterSeconds: seconds).refusing(because: "admin_locked_out")
        }
        let authorization = request.headers["Authorization"]
        guard BearerCredentials.matches(authorization: authorization, secret: token) else {
            if authorization != nil { lockout.failed(address, now: now) }
            throw GatewayError.adminUnauthorized.refusing(
                because: authorization == nil ? "admin_missing" : "admin_token")
        }
        lockout.succeeded(address)
        return await next(request, context, &report)
    }

    /// The fewest different characters an `ADMIN_TOKEN` may have.
    static let minimumDistinctCharacters = 8
    /// The least an `ADMIN_TOKEN`'s strength may be estimated at, in bits.
    static let minimumEstimatedBits = 96.0

    /// A rough strength of `token`: its length times log2 of the number of different
    /// characters in it. It takes no dictionary, so it can only refuse the obvious (one
    /// character repeated, a short word over and over); `openssl rand -hex 32` gives 256.
    static func estimatedBits(_ token: String) -> Double {
        let distinct = Set(token.utf8).count
        guard distinct > 1 else { return 0 }
        return Double(token.utf8.count) * log2(Double(distinct))
    }

    /// Whether `token` is too easy to guess to open the console: fewer than
    /// ``minimumDistinctCharacters`` different characters, or ``estimatedBits(_:)`` under
    /// ``minimumEstimatedBits``.
    static func isGuessable(_ token: String) -> Bool {
        Set(token.utf8).count < minimumDistinctCharacters || estimatedBits(token) < minimumEstimatedBits
    }
}
