/// A metric whose children each hold one value: a counter or a gauge.
package protocol ScalarMetric: AnyObject, Sendable {
    /// `# TYPE` of the family.
    static var kind: MetricKind { get }
    init(labelValues: [String], renderedLabels: String)
    /// The `{l1="v1",…}` text of its label values, rendered once.
    var renderedLabels: String { get }
    var value: Double { get }
}

/// A counter metric and its children, one per tuple of label values.
package typealias CounterFamily = ScalarMetricFamily<Counter>
/// A gauge metric and its children, one per tuple of label values.
package typealias GaugeFamily = ScalarMetricFamily<Gauge>

/// A counter or gauge metric and its children, one per tuple of label values.
package final class ScalarMetricFamily<Child: ScalarMetric>: MetricFamily {
    /// The metric name.
    package let name: String
    /// The label names, in the order `labels(_:)` takes their values.
    package let labelNames: [String]
    let help: String
    let children: LabelledChildren<Child>

    init(name: String, help: String, labelNames: [String], childLimit: Int) {
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.children = LabelledChildren(metricName: name, labelNames: labelNames, limit: childLimit) {
            values, rendered in
            Child(labelValues: values, renderedLabels: rendered)
        }
    }

    /// The child for these label values, one per label name in order (none for a family
    /// without labels). Look it up once and keep it when the values are fixed.
    package func labels(_ values: String...) -> Child {
        children.child(values)
    }

    /// The child for these label values, one per label name in order.
    package func labels(_ values: [String]) -> Child {
        children.child(values)
    }

    var kind: MetricKind { Child.kind }
    var sampleNames: [String] { [name] }

    func writeSamples(into text: inout String) {
        for child in children.sorted() {
            ExpositionFormat.appendSample(
                to: &text,
                name: name,
                labels: child.renderedLabels,
                value: ExpositionFormat.value(child.value)
            )
        }
    }
}
