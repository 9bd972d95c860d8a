import Synchronization

/// One gauge: a value that goes up and down, for one tuple of label values. Every
/// operation is lock-free; look the gauge up once with `GaugeFamily.labels(_:)` and keep it.
package final class Gauge: ScalarMetric {
    package static var kind: MetricKind { .gauge }
    /// The value, as the bit pattern of a `Double`.
    private let bits = Atomic<UInt64>(0.0.bitPattern)
    let labelValues: [String]
    package let renderedLabels: String

    package init(labelValues: [String], renderedLabels: String) {
        self.labelValues = labelValues
        self.renderedLabels = renderedLabels
    }

    /// Replaces the value.
    package func set(_ value: Double) {
        bits.store(value.bitPattern, ordering: .relaxed)
    }

    /// Adds `amount` (by default one).
    package func increment(by amount: Double = 1) {
        AtomicDouble.add(amount, to: bits)
    }

    /// Subtracts `amount` (by default one).
    package func decrement(by amount: Double = 1) {
        AtomicDouble.add(-amount, to: bits)
    }

    /// The current value.
    package var value: Double {
        Double(bitPattern: bits.load(ordering: .relaxed))
    }
}
