/// A counter metric and its children, one per tuple of label values.
public final class CounterFamily: MetricFamily {
    /// The metric name.
    public let name: String
    /// The label names, in the order `labels(_:)` takes their values.
    public let labelNames: [String]
    let help: String
    let children: LabelledChildren<Counter>

    init(name: String, help: String, labelNames: [String], childLimit: Int) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.children = LabelledChildren(metricName: name, labelNames: labelNames, limit: childLimit) {
            values, rendered in
            Counter(labelValues: values, renderedLabels: rendered)
        }
    }

    /// The counter for these label values, one per label name in order (none for a family
    /// without labels). Look it up once and keep it when the values are fixed.
    public func labels(_ values: String...) -> Counter {
        children.child(values)
    }

    /// The counter for these label values, one per label name in order.
    public func labels(_ values: [String]) -> Counter {
        children.child(values)
    }

    var kind: MetricKind { .counter }
    var sampleNames: [String] { [name] }

    func writeSamples(into text: inout String) {
        for counter in children.sorted() {
            ExpositionFormat.appendSample(
                to: &text,
                name: name,
                labels: counter.renderedLabels,
                value: ExpositionFormat.value(counter.value)
            )
        }
    }
}
