/// A histogram metric and its children, one per tuple of label values, all with the same
/// buckets.
package final class HistogramFamily: MetricFamily {
    /// The metric name; samples are `name_bucket`, `name_sum` and `name_count`.
    package let name: String
    /// The label names, in the order `labels(_:)` takes their values.
    package let labelNames: [String]
    /// The finite bucket upper bounds, strictly increasing; `+Inf` is implied.
    package let upperBounds: [Double]
    let help: String
    let children: LabelledChildren<Histogram>
    /// `le="…"` for each finite bound, then for `+Inf`, rendered once.
    private let bucketLabels: [String]

    init(name: String, help: String, labelNames: [String], buckets: [Double], childLimit: Int) {
        let upperBounds = Self.upperBounds(buckets, name: name)
        self.name = name
        self.help = help
        self.labelNames = labelNames
        self.upperBounds = upperBounds
        self.bucketLabels = (upperBounds + [.infinity]).map { bound in
            "le=\"\(ExpositionFormat.value(bound))\""
        }
        self.children = LabelledChildren(metricName: name, labelNames: labelNames, limit: childLimit) {
            values, rendered in
            Histogram(upperBounds: upperBounds, labelValues: values, renderedLabels: rendered)
        }
    }

    /// The histogram for these label values, one per label name in order (none for a family
    /// without labels). Look it up once and keep it when the values are fixed.
    package func labels(_ values: String...) -> Histogram {
        children.child(values)
    }

    /// The histogram for these label values, one per label name in order.
    package func labels(_ values: [String]) -> Histogram {
        children.child(values)
    }

    var kind: MetricKind { .histogram }
    var sampleNames: [String] { [name, name + "_bucket", name + "_sum", name + "_count"] }

    func writeSamples(into text: inout String) {
        let bucketName = name + "_bucket"
        let sumName = name + "_sum"
        let countName = name + "_count"
        for histogram in children.sorted() {
            let snapshot = histogram.snapshot()
            let prefix = histogram.renderedLabels.isEmpty ? "" : histogram.renderedLabels + ","
            var cumulative: UInt64 = 0
            for (bucket, label) in zip(snapshot.buckets, bucketLabels) {
                cumulative &+= bucket
                ExpositionFormat.appendSample(
                    to: &text,
                    name: bucketName,
                    labels: prefix + label,
                    value: ExpositionFormat.value(cumulative)
                )
            }
            ExpositionFormat.appendSample(
                to: &text,
                name: sumName,
                labels: histogram.renderedLabels,
                value: ExpositionFormat.value(snapshot.sum)
            )
            ExpositionFormat.appendSample(
                to: &text,
                name: countName,
                labels: histogram.renderedLabels,
                value: ExpositionFormat.value(snapshot.count)
            )
        }
    }

    /// Whether a second registration asked for the same buckets.
    func hasBuckets(_ buckets: [Double]) -> Bool {
        Self.upperBounds(buckets, name: name) == upperBounds
    }

    /// `buckets` without a trailing `+Inf`; stops the program unless the rest are finite
    /// and strictly increasing.
    private static func upperBounds(_ buckets: [Double], name: String) -> [Double] {
        var bounds = buckets
        if bounds.last == .infinity { bounds.removeLast() }
        for (index, bound) in bounds.enumerated() {
            precondition(
                bound.isFinite, "histogram \(name): bucket bounds must be finite (only a last +Inf is allowed)")
            precondition(
                index == 0 || bounds[index - 1] < bound,
                "histogram \(name): bucket bounds must be strictly increasing"
            )
        }
        return bounds
    }
}
