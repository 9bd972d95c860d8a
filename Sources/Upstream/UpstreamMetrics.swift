package import Telemetry

/// The pool's metrics, one child of each family per upstream, looked up once at start.
package struct UpstreamMetrics: Sendable {
    /// One upstream's children.
    struct Member: Sendable {
        let attempts: CounterFamily
        let name: String
        /// `result="ok"`, the common case, looked up once.
        let ok: Counter
        let duration: Histogram
        let retries: Counter
        let fallbacks: Counter
        let circuit: Gauge
        let circuitOpened: Counter

        /// An attempt was answered.
        func succeeded(seconds: Double) {
            ok.increment()
            duration.observe(seconds)
        }

        /// An attempt ended without an answer: `result` is the failure kind's label, or `cancelled`.
        func failed(_ result: String, seconds: Double) {
            attempts.labels(name, result).increment()
            duration.observe(seconds)
        }
    }

    private let attempts: CounterFamily
    private let duration: HistogramFamily
    private let retries: CounterFamily
    private let fallbacks: CounterFamily
    private let circuit: GaugeFamily
    private let circuitOpened: CounterFamily

    package init(registry: MetricsRegistry) {
        attempts = registry.counter(
            "textgateway_upstream_attempts_total",
            help: "Calls to each upstream, retries included, by result (ok or the failure's kind).",
            labels: ["upstream", "result"]
        )
        duration = registry.histogram(
            "textgateway_upstream_attempt_duration_seconds",
            help: "Time of each call to an upstream until its answer or failure.", labels: ["upstream"])
        retries = registry.counter(
            "textgateway_upstream_retries_total",
            help: "Calls made again to the same upstream after a retryable failure.", labels: ["upstream"])
        fallbacks = registry.counter(
            "textgateway_upstream_fallbacks_total",
            help: "Requests this upstream failed that went on to the next upstream.", labels: ["upstream"])
        circuit = registry.gauge(
            "textgateway_upstream_circuit_state",
            help: "Each upstream's circuit: 0 closed, 1 open (skipped), 2 half-open (one probe).", labels: ["upstream"])
        circuitOpened = registry.counter(
            "textgateway_upstream_circuit_opened_total",
            help: "Times an upstream's circuit opened after consecutive failures.", labels: ["upstream"])
    }

    func member(_ name: String) -> Member {
        let member = Member(
            attempts: attempts, name: name, ok: attempts.labels(name, "ok"), duration: duration.labels(name),
            retries: retries.labels(name),
            fallbacks: fallbacks.labels(name), circuit: circuit.labels(name), circuitOpened: circuitOpened.labels(name)
        )
        member.circuit.set(0)
        return member
    }
}
