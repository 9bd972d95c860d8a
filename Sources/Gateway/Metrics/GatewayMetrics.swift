import Access
import EventLoop
import Telemetry

/// The gateway's metrics (served at `GET /metrics` in the Prometheus text format). Label
/// values come from fixed sets (routes, statuses, task names, configured models, error
/// kinds), so the number of series stays bounded.
final class GatewayMetrics: Sendable {
    let registry: MetricsRegistry
    let requests: CounterFamily
    let requestDuration: HistogramFamily
    let upstreamDuration: HistogramFamily
    let inFlight: Gauge
    let upstreamErrors: CounterFamily
    let tokens: CounterFamily
    let rateLimited: CounterFamily
    let cache: CounterFamily
    let cost: CounterFamily
    let unpriced: CounterFamily
    let overBudget: CounterFamily
    /// The children a finished request records into, found without the families' locks.
    private let slots: RequestMetricSlots

    /// - Parameter tokenKeys: the task and model pairs the configuration allows, whose token
    ///   counters are found without a lock (others fall back to a lookup).
    init(registry: MetricsRegistry = MetricsRegistry(), tokenKeys: [(task: String, model: String)] = []) {
        self.registry = registry
        slots = RequestMetricSlots(tokenKeys: tokenKeys)
        requests = registry.counter(
            "textgateway_requests_total", help: "Requests answered, by route and status.", labels: ["route", "status"])
        requestDuration = registry.histogram(
            "textgateway_request_duration_seconds", help: "Time to answer a request (to the end of a stream).",
            labels: ["route"])
        upstreamDuration = registry.histogram(
            "textgateway_upstream_duration_seconds", help: "Time spent waiting on the upstream per request.",
            labels: ["route"])
        inFlight = registry.gauge("textgateway_requests_in_flight", help: "Requests being answered now.").labels()
        upstreamErrors = registry.counter(
            "textgateway_upstream_errors_total", help: "Failed upstream calls, by kind.", labels: ["kind"])
        tokens = registry.counter(
            "textgateway_tokens_total", help: "Tokens reported by the upstream, by task, model and direction.",
            labels: ["task", "model", "direction"])
        rateLimited = registry.counter(
            "textgateway_rate_limited_total", help: "Requests refused by a rate limit or quota, by reason.",
            labels: ["reason"])
        cache = registry.counter(
            "textgateway_cache_requests_total", help: "Response cache lookups, by result.", labels: ["result"])
        cost = registry.counter(
            "textgateway_cost_micros_total",
            help: "What the upstream calls cost at PRICES, in millionths of CURRENCY's unit, by task and model.",
            labels: ["task", "model"])
        unpriced = registry.counter(
            "textgateway_unpriced_requests_total",
            help: "Requests answered by a model PRICES gives no price for, by model.", labels: ["model"])
        overBudget = registry.counter(
            "textgateway_budget_refusals_total", help: "Requests refused by a spending budget, by its scope.",
            labels: ["scope"])
        // Every scope from 0, so a rule over its increase sees the first refusal.
        for scope in BudgetScope.allCases { _ = overBudget.labels(scope.rawValue) }
    }

    /// Records one finished request.
    func finished(
        route: RouteLabel, status: Int, seconds: Double, upstreamSeconds: Double, state: RequestSummary,
        outcome: RequestOutcome, cost: MoneySpent = .none
    ) {
        slots.requests(requests, route: route, status: status).increment()
        slots.duration(requestDuration, route: route, upstream: false).observe(seconds)
        if upstreamSeconds > 0 {
            slots.duration(upstreamDuration, route: route, upstream: true).observe(upstreamSeconds)
        }
        switch outcome {
        case .refused(let reason): rateLimited.labels(reason.description).increment()
        case .overBudget(let scope): overBudget.labels(scope.rawValue).increment()
        case .failed(let failure): upstreamErrors.labels(failure.label).increment()
        default: break
        }
        if outcome != .cacheHit, let task = state.report.task, let model = state.report.model, let usage = state.usage {
            if let input = usage.promptTokens {
                slots.tokens(tokens, task: task, model: model, direction: "input").increment(by: input)
            }
            if let output = usage.completionTokens {
                slots.tokens(tokens, task: task, model: model, direction: "output").increment(by: output)
            }
            if let micros = cost.micros, micros > 0 { self.cost.labels(task, model).increment(by: Int(micros)) }
        }
        if let model = cost.unpricedModel { unpriced.labels(model).increment() }
    }
}
