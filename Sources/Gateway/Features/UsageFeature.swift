/// `GET /api/usage`: a caller's own day against its plan, from the store; identified callers
/// only, whatever `AUTH_REQUIRED` says, and outside the limits (a caller over its quota can
/// still see why).
struct UsageFeature: GatewayFeature {
    private let parts: GatewayParts
    private let admission: CallerFront
    private let budgets: BudgetMiddleware?

    init(_ parts: GatewayParts, admission: CallerFront, budgets: BudgetMiddleware? = nil) {
        self.parts = parts
        self.admission = admission
        self.budgets = budgets
    }

    var routes: [Route] {
        guard let store = parts.store else { return [] }
        return [
            Route(
                method: .GET, path: "/api/usage", middleware: [admission.caller(required: true)],
                handler: UsageRoute(
                    usage: store.backend, plans: parts.configuration.plans, faults: store.faults, clock: parts.clock,
                    budgets: budgets,
                    currency: parts.configuration.prices == nil ? nil : parts.configuration.currency))
        ]
    }
}
