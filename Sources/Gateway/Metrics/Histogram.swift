import Synchronization

/// One histogram: observations counted into buckets, with their sum and count, for one
/// tuple of label values. An observation is one brief lock (so a scrape always sees
/// buckets, sum and count that agree); look the histogram up once with
/// `HistogramFamily.labels(_:)` and keep it.
public final class Histogram: Sendable {
    /// What a scrape reads: per-bucket (not cumulative) counts, the last one for `+Inf`.
    struct Snapshot: Sendable {
        var buckets: [UInt64]
        var sum: Double
        var count: UInt64
    }

    /// The finite upper bounds, strictly increasing.
    let upperBounds: [Double]
    let labelValues: [String]
    let renderedLabels: String
    private let state: Mutex<Snapshot>

    init(upperBounds: [Double], labelValues: [String], renderedLabels: String) {
        self.upperBounds = upperBounds
        self.labelValues = labelValues
        self.renderedLabels = renderedLabels
        self.state = Mutex(Snapshot(buckets: Array(repeating: 0, count: upperBounds.count + 1), sum: 0, count: 0))
    }

    /// Records `value` (seconds, by convention, for durations). NaN is ignored: it would
    /// turn the sum into NaN for good.
    public func observe(_ value: Double) {
        guard !value.isNaN else { return }
        let index = bucketIndex(value)
        state.withLock { state in
            state.buckets[index] &+= 1
            state.sum += value
            state.count &+= 1
        }
    }

    /// Records `duration` in seconds.
    public func observe(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        observe(Double(seconds) + Double(attoseconds) * 1e-18)
    }

    /// How many values were observed.
    public var count: UInt64 {
        state.withLock { $0.count }
    }

    /// The sum of the observed values.
    public var sum: Double {
        state.withLock { $0.sum }
    }

    func snapshot() -> Snapshot {
        state.withLock { $0 }
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
