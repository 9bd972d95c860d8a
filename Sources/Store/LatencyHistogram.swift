/// Latencies counted in 16 fixed buckets (the operator's roll-ups keep one column per bucket):
/// cheap to add up across rows and slots, and good enough for a p50 or a p95 on a console.
package struct LatencyHistogram: Sendable, Equatable {
    /// Each bucket's upper bound in milliseconds, inclusive; the last is open.
    package static let bounds: [Double] = [
        0.5, 1, 2, 5, 10, 20, 50, 100, 200, 500, 1_000, 2_000, 5_000, 10_000, 30_000, .infinity,
    ]

    /// What a percentile in the open bucket reports: its lower edge.
    static let openBucketValue = 30_000.0

    /// How many values fell in each bucket, in the order of ``bounds``.
    package var counts: [Int]

    package init(counts: [Int] = Array(repeating: 0, count: 16)) {
        self.counts = counts
    }

    /// The first bucket whose bound is at or above `milliseconds` (a value that is not a
    /// number goes to the open bucket).
    package static func bucket(ofMilliseconds milliseconds: Double) -> Int {
        bounds.firstIndex { milliseconds <= $0 } ?? bounds.count - 1
    }

    package mutating func add(milliseconds: Double) {
        counts[Self.bucket(ofMilliseconds: milliseconds)] += 1
    }

    /// The values counted.
    package var total: Int { counts.reduce(0, +) }

    /// The bound of the bucket where the running count first reaches `ceil(p * total)` (at
    /// least one value), 30000 for the open bucket; nil when nothing was counted.
    package func percentile(_ p: Double) -> Double? {
        let total = total
        guard total > 0 else { return nil }
        let rank = max(1, min(total, Int((p * Double(total)).rounded(.up))))
        var running = 0
        for (index, count) in counts.enumerated() {
            running += count
            if running >= rank {
                return index == counts.count - 1 ? Self.openBucketValue : Self.bounds[index]
            }
        }
        return Self.openBucketValue
    }

    /// Each bucket's sum with `other`'s.
    static func + (left: LatencyHistogram, right: LatencyHistogram) -> LatencyHistogram {
        LatencyHistogram(counts: zip(left.counts, right.counts).map { $0 + $1 })
    }
}
