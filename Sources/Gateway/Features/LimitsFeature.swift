import Access
import EventLoop
import Redis
import Store
import Telemetry

/// The callers' limits (`RATE_LIMITS`, `PLANS`): the rate limiter, in this process's memory
/// (its daily quotas starting from what the store counted today) or shared in Redis, whose
/// lease renewal is its service.
struct LimitsFeature: GatewayFeature {
    private let configuration: GatewayConfiguration
    private let clock: @Sendable () -> Instant
    /// Nil when the configuration turns limits off.
    let limiter: (any RateLimiter)?
    /// The spending budgets' sums (`BUDGETS`, plans' budgets); nil when none is set. Kept
    /// whatever `RATE_LIMITS` says: they are the operator's ceiling, not a caller's pace.
    let budgets: (any BudgetKeeper)?
    /// The upstream models a request may be answered by, whose dearest price a worst case takes.
    private let models: [String]
    /// What the gateway's prompt adds to a text upstream (``ProcessBodies/overheadBytes(configuration:)``).
    private let overhead: (prompt: Int, repair: Int)
    private(set) var services: [any Service]

    /// - Parameters:
    ///   - rateLimiter: a limiter of the caller's, in place of the configured one.
    ///   - tokensChargedToday: user id → tokens the store counted today.
    ///   - spent: what the store counted since the budgets' day and month began, where this
    ///     process keeps the budgets (Redis keeps its own across restarts).
    init(
        _ parts: GatewayParts, rateLimiter: (any RateLimiter)?, tokensChargedToday: [String: Int],
        spent: (day: [Spending], month: [Spending]) = ([], [])
    ) {
        let configuration = parts.configuration
        self.configuration = configuration
        clock = parts.clock
        var limiter: (any RateLimiter)?
        var services: [any Service] = []
        if let redis = parts.redis { SharedRateLimiter.registerUpGauge(parts.registry, client: redis) }
        if configuration.rateLimitsEnabled {
            if let rateLimiter {
                limiter = rateLimiter
            } else {
                let local = InMemoryRateLimiter(leaseTimeToLive: configuration.leaseTimeToLive)
                let now = parts.clock()
                for (userID, tokens) in tokensChargedToday {
                    local.seed(tokensUsed: tokens, key: RateLimitMiddleware.key(userID: userID), now: now)
                }
                limiter = local
                if let redis = parts.redis {
                    let shared = RedisRateLimiter(
                        client: redis,
                        leaseTimeToLive: RedisRateLimiter.leaseTimeToLive(
                            upstreamTimeout: configuration.upstreamTimeout))
                    let limits = SharedRateLimiter(
                        client: redis, shared: shared, local: local, mode: configuration.redisFailureMode,
                        registry: parts.registry, logger: parts.logger
                    )
                    limiter = limits
                    services.append(limits.renewalService())
                }
            }
        }
        self.limiter = limiter
        let budgets = Self.budgetKeeper(configuration, redis: parts.redis)
        if let local = budgets as? InMemoryBudgetKeeper {
            local.seed(day: spent.day, month: spent.month, now: parts.clock())
        }
        self.budgets = budgets
        models = configuration.upstreamModels.sorted()
        overhead = budgets == nil ? (0, 0) : ProcessBodies.overheadBytes(configuration: configuration)
        self.services = services
        if let policy = budgetPolicy(.process), !policy.sharedAccounts.isEmpty {
            self.services.append(Self.budgetGauges(policy, parts: parts))
        }
    }

    /// The shared budgets' use as gauges (`textgateway_budget_used_ratio` and the amounts), read
    /// from the keeper every 5 s: the same figures on every instance that shares Redis.
    private static func budgetGauges(_ policy: BudgetMiddleware, parts: GatewayParts) -> PeriodicService {
        let labels = ["scope", "period", "unit"]
        let ratio = parts.registry.gauge(
            "textgateway_budget_used_ratio",
            help: "The share of each shared budget used in its current period (requests that ended).",
            labels: labels)
        let used = parts.registry.gauge(
            "textgateway_budget_used", help: "What each shared budget's period has used (micro-units or tokens).",
            labels: labels)
        let limit = parts.registry.gauge(
            "textgateway_budget_limit", help: "Each shared budget's amount a period (micro-units or tokens).",
            labels: labels)
        let accounts = policy.sharedAccounts
        let keeper = policy.keeper
        let clock = parts.clock
        let logger = parts.logger
        return PeriodicService(name: "budget_gauges", interval: .seconds(5), immediately: true) {
            let uses: [BudgetUse]
            do {
                uses = try await keeper.use(of: accounts, now: clock())
            } catch {
                logger.warning("budget_read_failed")
                return
            }
            for use in uses {
                let values = [
                    use.scope.rawValue, use.limit.period.rawValue, use.limit.unit.rawValue,
                ]
                ratio.labels(values).set(use.fraction)
                used.labels(values).set(Double(use.used))
                limit.labels(values).set(Double(use.limit.amount))
            }
        }
    }

    /// The budgets' keeper: shared by every instance on Redis when there is one, else this
    /// process's; nil when no budget is set.
    static func budgetKeeper(_ configuration: GatewayConfiguration, redis: RedisClient?) -> (any BudgetKeeper)? {
        guard configuration.hasBudgets else { return nil }
        guard let redis else { return InMemoryBudgetKeeper(calendar: configuration.budgetCalendar) }
        // A hold outlives the longest request (a stream's whole time) with a margin; one whose
        // instance died is counted at its reservation when it expires.
        let longest = max(configuration.upstreamTimeout, configuration.streamTotalTimeout)
        return RedisBudgetKeeper(
            client: redis, calendar: configuration.budgetCalendar, holdTimeToLive: longest + .seconds(30))
    }

    /// The limits of a route whose requests cost `cost`; none when limits are off (a concern
    /// the configuration turns off is no layer at all).
    func middleware(_ cost: RequestCost, budgets useBudgets: Bool = true) -> [any Middleware] {
        var steps: [any Middleware] = []
        if let limiter {
            steps.append(
                RateLimitMiddleware(
                    limiter: limiter, plans: configuration.plans, clients: configuration.clientAddressKey,
                    maxTokens: configuration.maxTokens,
                    cost: cost, clock: clock
                ))
        }
        if useBudgets, cost.goesUpstream, let policy = budgetPolicy(cost) { steps.append(policy) }
        return steps
    }

    /// The budgets' step of a route whose requests cost `cost` (and the policy a job's calls
    /// follow); nil when no budget is set.
    func budgetPolicy(_ cost: RequestCost) -> BudgetMiddleware? {
        budgets.map {
            BudgetMiddleware(
                keeper: $0, settings: configuration.budgets, plans: configuration.plans,
                clients: configuration.clientAddressKey, maxTokens: configuration.maxTokens, cost: cost,
                prices: configuration.prices, models: models, overhead: overhead, clock: clock)
        }
    }
}
