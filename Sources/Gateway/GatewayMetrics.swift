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

    /// The route label: one of the gateway's routes, or `other`.
    static func route(_ path: String) -> String {
        switch path {
        case "/api/health", "/api/process", "/v1/chat/completions", "/v1/models", "/metrics": return path
        default: return "other"
        }
    }

    /// Records one finished request.
    func finished(path: String, status: Int, seconds: Double, upstreamSeconds: Double, fields: AccessRecord.Fields) {
        let route = Self.route(path)
        requests.labels(route, String(status)).increment()
        requestDuration.labels(route).observe(seconds)
        if upstreamSeconds > 0 { upstreamDuration.labels(route).observe(upstreamSeconds) }
        if fields.outcome != "cache_hit", let task = fields.task, let model = fields.model {
            if let input = fields.inputTokens { tokens.labels(task, model, "input").increment(by: input) }
            if let output = fields.outputTokens { tokens.labels(task, model, "output").increment(by: output) }
        }
    }
}
