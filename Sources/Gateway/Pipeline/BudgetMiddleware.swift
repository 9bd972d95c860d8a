import Access
import HTTPServer
import Pricing
import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// Reserves a request's worst case in every budget it counts in, before its upstream call:
/// its plan's own (the caller, or a guest's address), all guests' or all device sessions',
/// and the whole gateway's, in money and in tokens. One that has no room refuses with
/// `429 budget_exceeded` and its scope. The reservation is the finisher's to settle with what
/// the request used (``RequestFinisher``), so the budgets hold however many requests run at
/// once.
struct BudgetMiddleware: Middleware {
    let keeper: any BudgetKeeper
    let settings: BudgetSettings
    let plans: PlanCatalog
    /// A guest's address as its key (behind trusted proxies, an IPv6 one by its prefix).
    let clients: ClientAddressKey
    /// `MAX_TOKENS`: the most an answer may take.
    let maxTokens: Int
    /// How the route's worst case is worked out.
    let cost: RequestCost
    let prices: PriceList?
    /// Every model a request may be answered by: the worst case is priced at the dearest.
    let models: [String]
    let clock: @Sendable () -> Instant
    /// What the gateway adds to an `/api/process` text upstream, and a structured answer's
    /// repair call on top (``ProcessBodies/overheadBytes(configuration:)``).
    let overhead: (prompt: Int, repair: Int)
    /// ``keeper`` when it is this process's: reserved without an await.
    let local: InMemoryBudgetKeeper?
    /// The plan of a caller without a credential, looked up once.
    private let guestPlan: Plan
    /// The shared budgets' accounts, made once.
    private let guests: BudgetAccount?
    private let devices: BudgetAccount?
    private let gateway: BudgetAccount?

    init(
        keeper: any BudgetKeeper, settings: BudgetSettings, plans: PlanCatalog, clients: ClientAddressKey,
        maxTokens: Int, cost: RequestCost, prices: PriceList?, models: [String],
        overhead: (prompt: Int, repair: Int) = (0, 0), clock: @escaping @Sendable () -> Instant
    ) {
        self.overhead = overhead
        local = keeper as? InMemoryBudgetKeeper
        guestPlan = plans.plan(for: nil)
        self.keeper = keeper
        self.settings = settings
        self.plans = plans
        self.clients = clients
        self.maxTokens = maxTokens
        self.cost = cost
        self.prices = prices
        self.models = models
        self.clock = clock
        guests = settings.guests.isEmpty ? nil : BudgetAccount(scope: .guests, key: "guests", limits: settings.guests)
        devices =
            settings.devices.isEmpty ? nil : BudgetAccount(scope: .devices, key: "devices", limits: settings.devices)
        gateway =
            settings.gateway.isEmpty ? nil : BudgetAccount(scope: .gateway, key: "gateway", limits: settings.gateway)
    }

    func handle(
        _ request: HTTPRequest, context: RequestContext, report: inout RouteReport, next: @escaping RouteResponder
    ) async throws -> RouteAnswer {
        // Out of line: the reservation's frame is gone before the steps after this one run.
        if let reservation = try await reserve(request, caller: context.caller) { report.budget = reservation }
        return await next(request, context, &report)
    }

    /// The request's reservation in its budgets; nil when it counts in none or calls no model.
    @inline(never)
    private func reserve(_ request: HTTPRequest, caller: Caller?) async throws -> BudgetReservation? {
        let accounts = accounts(for: caller, request)
        guard !accounts.isEmpty else { return nil }
        var tokens = cost.worstCaseTokens(body: request.body, maxTokens: maxTokens)
        // Nothing goes upstream (the route refuses the request, or asks no model).
        guard tokens.input > 0 || tokens.output > 0 else { return nil }
        if case .process = cost { tokens = processWorstCase(tokens, body: request.body) }
        let now = clock()
        let micros = worstMicros(input: tokens.input, output: tokens.output, at: now)
        let demand = BudgetDemand(
            accounts: accounts, worstTokens: Int64(clamping: tokens.input &+ tokens.output), worstMicros: micros)
        let decision: BudgetDecision
        if let local {
            // This process's sums: a call, not an await.
            decision = local.reserve(demand, now: now)
        } else {
            do {
                decision = try await keeper.reserve(demand, now: now)
            } catch {
                // A budget that cannot be asked is not a budget that holds: refused, not let through.
                throw GatewayError.upstreamBusy
            }
        }
        switch decision {
        case .refused(let refusal):
            throw GatewayError.budgetExceeded(refusal.scope, retryAfterSeconds: refusal.retryAfterSeconds)
        case .allowed(let hold):
            return hold.map { BudgetReservation(hold: $0, keeper: keeper, local: local, worstMicros: micros) }
        }
    }

    /// An `/api/process` request's worst case: its text inside the gateway's prompt, and when
    /// it may ask for `"format": "json"`, a repair call too (the first call's body, its answer,
    /// and the repair's message, which may quote as much again).
    func processWorstCase(_ tokens: (input: Int, output: Int), body: [UInt8]) -> (input: Int, output: Int) {
        let first = tokens.input + (overhead.prompt + 2) / 3
        guard Self.mayAskJSON(body) else { return (first, tokens.output) }
        return (2 * first + 2 * maxTokens + (overhead.repair + 2) / 3, 2 * tokens.output)
    }

    /// Whether `body` may ask for a structured answer: it holds `"json"`, or an escape that
    /// could spell it. Either only makes the reservation larger.
    static func mayAskJSON(_ body: [UInt8]) -> Bool {
        body.withUnsafeBytes { bytes in
            guard let base = bytes.baseAddress else { return false }
            let end = base + bytes.count
            // memchr jumps from quote to quote (and backslash to backslash), many bytes at a time.
            var from = base
            while let found = memchr(from, 0x22, end - from) {
                let quote = UnsafeRawPointer(found)
                if end - quote >= 6, memcmp(quote, Self.jsonValue, 6) == 0 { return true }
                from = quote + 1
            }
            from = base
            while let found = memchr(from, 0x5C, end - from) {
                let slash = UnsafeRawPointer(found)
                if end - slash >= 2, slash.load(fromByteOffset: 1, as: UInt8.self) == 0x75 { return true }
                from = slash + 1
            }
            return false
        }
    }

    /// `"json"`, as it stands in a body that asks for it.
    private static let jsonValue: [UInt8] = Array(#""json""#.utf8)

    /// The budgets every caller of a kind shares (all guests', all device sessions', the
    /// gateway's), those that are set.
    var sharedAccounts: [BudgetAccount] { [guests, devices, gateway].compactMap { $0 } }

    /// The caller's own budgets (its plan's); none when its plan has none.
    func ownAccounts(of caller: Caller) -> [BudgetAccount] {
        let plan = plans.plan(for: caller)
        guard !plan.budgets.isEmpty else { return [] }
        return [
            BudgetAccount(scope: .caller, key: RateLimitMiddleware.key(userID: caller.userID), limits: plan.budgets)
        ]
    }

    /// The budgets a request of `caller` counts in.
    func accounts(for caller: Caller?, _ request: HTTPRequest) -> [BudgetAccount] {
        let plan = caller == nil ? guestPlan : plans.plan(for: caller)
        // The key is built only for a plan with a budget of its own.
        let key =
            plan.budgets.isEmpty
            ? "" : caller.map { RateLimitMiddleware.key(userID: $0.userID) } ?? "address:" + clients.key(for: request)
        return Self.accounts(
            userID: caller?.userID, plan: plan, key: key, guests: guests, devices: devices, gateway: gateway)
    }

    /// The budgets of a caller (`userID`, nil for a guest) under `plan`, whose own budget is
    /// kept under `key` (a job's calls: the job's caller).
    func accounts(userID: String?, plan: Plan, key: String) -> [BudgetAccount] {
        Self.accounts(userID: userID, plan: plan, key: key, guests: guests, devices: devices, gateway: gateway)
    }

    /// The budgets of a caller (`userID`, nil for a guest) under `plan`, whose own budget is
    /// kept under `key`; the shared accounts where they are set.
    static func accounts(
        userID: String?, plan: Plan, key: String, guests: BudgetAccount?, devices: BudgetAccount?,
        gateway: BudgetAccount?
    ) -> [BudgetAccount] {
        var accounts: [BudgetAccount] = []
        accounts.reserveCapacity(3)
        if !plan.budgets.isEmpty { accounts.append(BudgetAccount(scope: .caller, key: key, limits: plan.budgets)) }
        if let userID {
            if let devices, userID.hasPrefix(devicePrefix) { accounts.append(devices) }
        } else if let guests {
            accounts.append(guests)
        }
        if let gateway { accounts.append(gateway) }
        return accounts
    }

    /// A device session's user id starts with this.
    static let devicePrefix = DeviceSessions.userID(deviceID: "")

    /// The most `input` and `output` tokens cost at the dearest price in force of ``models``
    /// (the models a request may be answered by: retries and a fallback included); 0 without
    /// prices.
    func worstMicros(input: Int, output: Int, at now: Instant) -> Int64 {
        guard let prices else { return 0 }
        let milliseconds = Int64((now.secondsSinceEpoch * 1000).rounded(.down))
        let tokens = TokenCounts(input: input, output: output)
        var dearest: Int64 = 0
        for model in models {
            if let cost = prices.cost(of: tokens, model: model, at: milliseconds), cost > dearest { dearest = cost }
        }
        return dearest
    }
}
