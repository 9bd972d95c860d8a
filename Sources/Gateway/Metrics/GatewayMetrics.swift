import EventLoop

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

    init(registry: MetricsRegistry = MetricsRegistry()) {
        self.registry = registry
        requests = registry.counter("textgateway_requests_total", help: "Requests answered, by route and status.", labels: ["route", "status"])
        requestDuration = registry.histogram("textgateway_request_duration_seconds", help: "Time to answer a request (to the end of a stream).", labels: ["route"])
        upstreamDuration = registry.histogram("textgateway_upstream_duration_seconds", help: "Time spent waiting on the upstream per request.", labels: ["route"])
        inFlight = registry.gauge("textgateway_requests_in_flight", help: "Requests being answered now.").labels()
        upstreamErrors = registry.counter("textgateway_upstream_errors_total", help: "Failed upstream calls, by kind.", labels: ["kind"])
        tokens = registry.counter("textgateway_tokens_total", help: "Tokens reported by the upstream, by task, model and direction.", labels: ["task", "model", "direction"])
        rateLimited = registry.counter("textgateway_rate_limited_total", help: "Requests refused by a rate limit or quota, by reason.", labels: ["reason"])
        cache = registry.counter("textgateway_cache_requests_total", help: "Response cache lookups, by result.", labels: ["result"])
    }

    /// Records one finished request.
    func finished(route: RouteLabel, status: Int, seconds: Double, upstreamSeconds: Double, state: RequestContext.State, outcome: RequestOutcome) {
        requests.labels(route.rawValue, String(status)).increment()
        requestDuration.labels(route.rawValue).observe(seconds)
        if upstreamSeconds > 0 { upstreamDuration.labels(route.rawValue).observe(upstreamSeconds) }
        switch outcome {
        case .refused(let reason): rateLimited.labels(reason.description).increment()
        case .failed(let failure): upstreamErrors.labels(failure.label).increment()
        default: break
        }
        if outcome != .cacheHit, let task = state.task, let model = state.model, let usage = state.usage {
            if let input = usage.promptTokens { tokens.labels(task, model, "input").increment(by: input) }
            if let output = usage.completionTokens { tokens.labels(task, model, "output").increment(by: output) }
        }
    }
}
