/// The Prometheus metric types this registry exposes, spelled as on a `# TYPE` line.
package enum MetricKind: String, Sendable {
    case counter
    case gauge
    case histogram
}
