import HTTP1

/// The operator's console (`ADMIN_TOKEN`): its page, open, and its API behind the admin token,
/// outside every caller's limits (no rate limiter, no ledger row).
struct AdminConsoleFeature: GatewayFeature {
    let parts: GatewayParts
    /// The budgets' policy, for their state; nil when none is set.
    var budgets: BudgetMiddleware? = nil

    var routes: [Route] {
        let configuration = parts.configuration
        guard let adminToken = configuration.adminToken else { return [] }
        let clock = parts.clock
        let access = AdminAccess(
            token: adminToken, lockout: AdminLockout(failures: configuration.adminFailuresPerMinute),
            clients: configuration.clientAddressKey, clock: clock)
        let api = AdminAPI(
            store: parts.store?.backend, faults: parts.store?.faults, pool: parts.pool, plans: configuration.plans,
            language: configuration.errorLanguage, clock: clock, budgets: budgets,
            currency: configuration.prices == nil ? nil : configuration.currency)
        let language = configuration.errorLanguage
        let locked: [any Middleware] = [access]
        func call(_ method: HTTPMethod, _ path: String, _ endpoint: AdminAPI.Endpoint) -> Route {
            Route(
                method: method, path: "/api/admin/" + path, middleware: locked,
                handler: AdminRoute(api: api, endpoint: endpoint))
        }
        func asset(_ path: String, _ asset: ConsolePageRoute.Asset) -> Route {
            Route(method: .GET, path: path, middleware: [], handler: ConsolePageRoute(asset: asset, language: language))
        }
        return [
            asset("/admin", .page), asset("/admin/console.css", .style), asset("/admin/console.js", .script),
            call(.GET, "summary", .summary), call(.GET, "series", .series), call(.GET, "callers", .callers),
            call(.GET, "models", .models), call(.GET, "budgets", .budgets),
            call(.GET, "upstreams", .upstreams), call(.GET, "failures", .failures), call(.GET, "jobs", .jobs),
            call(.GET, "tokens", .tokens), call(.POST, "tokens", .tokens), call(.DELETE, "tokens/{id}", .token),
            call(.GET, "plans", .plans),
        ]
    }
}
