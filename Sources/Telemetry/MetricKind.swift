/// The Prometheus metric types this registry exposes, spelled as on a `# TYPE` line.
public enum MetricKind: String, Sendable {
    case counter
    case gauge
    case histogram
}
