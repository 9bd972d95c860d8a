/// A gauge metric and its children, one per tuple of label values.
public final class GaugeFamily: MetricFamily {
    /// The metric name.
    public let name: String
    /// The label names, in the order `labels(_:)` takes their values.
    public let labelNames: [String]
    let help: String
    let children: LabelledChildren<Gauge>

    init(name: String, help: String, labelNames: [String], childLimit: Int) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.children = LabelledChildren(metricName: name, labelNames: labelNames, limit: childLimit) {
            values, rendered in
            Gauge(labelValues: values, renderedLabels: rendered)
        }
    }

    /// The gauge for these label values, one per label name in order (none for a family
    /// without labels). Look it up once and keep it when the values are fixed.
    public func labels(_ values: String...) -> Gauge {
        children.child(values)
    }

    /// The gauge for these label values, one per label name in order.
    public func labels(_ values: [String]) -> Gauge {
        children.child(values)
    }

    var kind: MetricKind { .gauge }
    var sampleNames: [String] { [name] }

    func writeSamples(into text: inout String) {
        for gauge in children.sorted() {
            ExpositionFormat.appendSample(
                to: &text,
                name: name,
                labels: gauge.renderedLabels,
                value: ExpositionFormat.value(gauge.value)
            )
        }
    }
}
