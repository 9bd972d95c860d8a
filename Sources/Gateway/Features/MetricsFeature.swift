/// `GET /metrics`: the Prometheus exposition, behind `METRICS_TOKEN` when it is set.
struct MetricsFeature: GatewayFeature {
    let parts: GatewayParts

    var routes: [Route] {
        [
            Route(
                method: .GET, path: "/metrics", middleware: [],
                handler: MetricsRoute(registry: parts.metrics.registry, token: parts.configuration.metricsToken))
        ]
    }
}
