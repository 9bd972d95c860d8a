import Synchronization

/// One histogram: observations counted into buckets, with their sum, for one tuple of label
/// values. An observation takes no lock (an atomic add to its bucket, one to the sum), so
/// the loops never wait on each other to record a request. A scrape reads the count as the
/// sum of the buckets, so buckets and count always agree; the sum may lag an observation
/// being recorded at that instant, as in Prometheus's own clients. Look the histogram up
/// once with `HistogramFamily.labels(_:)` and keep it.
package final class Histogram: Sendable {
    /// What a scrape reads: per-bucket (not cumulative) counts, the last one for `+Inf`.
    struct Snapshot: Sendable {
        var buckets: [UInt64]
        var sum: Double
        var count: UInt64
    }

    /// One atomic counter, boxed so a histogram can hold an array of them.
    private final class Cell: Sendable {
        let value = Atomic<UInt64>(0)
    }

    /// The finite upper bounds, strictly increasing.
    let upperBounds: [Double]
    let labelValues: [String]
    let renderedLabels: String
    private let buckets: [Cell]
    /// The sum, as the bit pattern of a `Double`.
    private let sumBits = Atomic<UInt64>(0.0.bitPattern)

    init(upperBounds: [Double], labelValues: [String], renderedLabels: String) {
        self.upperBounds = upperBounds
        self.labelValues = labelValues
        self.renderedLabels = renderedLabels
        buckets = (0...upperBounds.count).map { _ in Cell() }
    }

    /// Records `value` (seconds, by convention, for durations). NaN is ignored: it would
    /// turn the sum into NaN for good.
    package func observe(_ value: Double) {
        guard !value.isNaN else { return }
        buckets[bucketIndex(value)].value.wrappingAdd(1, ordering: .relaxed)
        AtomicDouble.add(value, to: sumBits)
    }

    /// Records `duration` in seconds.
    package func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) * 1e-18)
    }

    /// How many values were observed.
    package var count: UInt64 {
        buckets.reduce(0) { $0 &+ $1.value.load(ordering: .relaxed) }
    }

    /// The sum of the observed values.
    package var sum: Double {
        Double(bitPattern: sumBits.load(ordering: .relaxed))
    }

    func snapshot() -> Snapshot {
        let counts = buckets.map { $0.value.load(ordering: .relaxed) }
        return Snapshot(buckets: counts, sum: sum, count: counts.reduce(0, &+))
    }

    /// The first bucket whose upper bound is at least `value`; `upperBounds.count` for `+Inf`.
    private func bucketIndex(_ value: Double) -> Int {
        var low = 0
        var high = upperBounds.count
        while low < high {
            let middle = (low + high) / 2
            if value <= upperBounds[middle] {
                high = middle
            } else {
                low = middle + 1
            }
        }
        return low
    }
}
