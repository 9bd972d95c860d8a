import Synchronization

/// One counter: a value that only goes up, for one tuple of label values. Increments are
/// lock-free; look the counter up once with `CounterFamily.labels(_:)` and keep it.
package final class Counter: ScalarMetric {
    package static var kind: MetricKind { .counter }
    /// Whole increments, kept apart so the common `increment()` is a single atomic add.
    private let whole = Atomic<UInt64>(0)
    /// Fractional increments, as the bit pattern of a `Double`.
    private let fraction = Atomic<UInt64>(0.0.bitPattern)
    let labelValues: [String]
    package let renderedLabels: String

    package init(labelValues: [String], renderedLabels: String) {
        self.labelValues = labelValues
        self.renderedLabels = renderedLabels
    }

    /// Adds one.
    package func increment() {
        increment(by: 1 as Int)
    }

    /// Adds `amount`; a negative amount is ignored, so a count reported from outside (say,
    /// an upstream's token usage) can never make the counter go down or stop the server.
    package func increment(by amount: Int) {
        guard amount > 0 else { return }
        whole.wrappingAdd(UInt64(amount), ordering: .relaxed)
    }

    /// Adds `amount`; a negative or NaN amount is ignored (see `increment(by:)` for `Int`).
    package func increment(by amount: Double) {
        guard amount > 0 else { return }
        if amount.rounded(.towardZero) == amount, amount < 0x1p53 {
            whole.wrappingAdd(UInt64(amount), ordering: .relaxed)
            return
        }
        AtomicDouble.add(amount, to: fraction)
    }

    /// The current value.
    package var value: Double {
        Double(whole.load(ordering: .relaxed)) + Double(bitPattern: fraction.load(ordering: .relaxed))
    }
}
