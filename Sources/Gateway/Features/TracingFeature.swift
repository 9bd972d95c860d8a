import EventLoop
import HTTPClient
import Tracing

/// Traces (docs/observability.md): when an OTLP endpoint is set, the exporter that sends the
/// spans in batches, as a service (first to start, last to stop, so the spans of requests
/// that end during the drain still go out), and the tracer the pipeline and the finisher use.
struct TracingFeature: GatewayFeature {
    let tracer: RequestTracer?
    let services: [any Service]

    init(_ parts: GatewayParts, version: String) {
        guard let settings = parts.configuration.tracing else {
            tracer = nil
            services = []
            return
        }
        // The gateway's client where it has one (its loops, its connections); a tracing test
        // without one gets a client of its own.
        guard let client = parts.httpClient ?? (try? HTTPClient()) else {
            parts.logger.error("tracing_off", [("reason", .string("no HTTP client"))])
            tracer = nil
            services = []
            return
        }
        let exporter = SpanExporter(
            settings: settings, client: client, metrics: parts.registry, logger: parts.logger, version: version)
        tracer = RequestTracer(
            settings: settings, exporter: exporter, trustedProxies: parts.configuration.trustedProxies)
        services = [exporter]
    }
}
