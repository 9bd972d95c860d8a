import Telemetry

/// The requests one key started in the last 60 seconds, counted per second: a sliding
/// window of one-second resolution.
///
/// Only seconds that saw a request are stored, oldest first (at most 60 of them), so an idle
/// key costs nothing and a busy one at most 60 small counters. A request started in second
/// `s` stops counting at `s + 60`.
struct SlidingMinuteWindow {
    private struct Bucket {
        var second: Int64
        var count: Int
    }

    /// The window's length in seconds.
    static let length: Int64 = 60

    private var buckets: [Bucket] = []

    /// Requests counted (call ``prune(now:)`` first for an up-to-date figure).
    private(set) var count = 0

    /// Whether no request is counted.
    var isEmpty: Bool { buckets.isEmpty }

    /// Forgets requests started 60 or more seconds before `now`.
    mutating func prune(now: Instant) {
        let oldestKept = now.wholeSeconds - Self.length + 1
        var dropped = 0
        while dropped < buckets.count, buckets[dropped].second < oldestKept {
            count -= buckets[dropped].count
            dropped += 1
        }
        if dropped > 0 { buckets.removeFirst(dropped) }
    }

    /// Counts one request started at `now`. When the clock has stepped back behind the
    /// newest second counted, the request is counted in that second: never forgotten
    /// earlier than it would have been.
    mutating func add(now: Instant) {
        let second = now.wholeSeconds
        count += 1
        if let last = buckets.indices.last, buckets[last].second >= second {
            buckets[last].count += 1
        } else {
            buckets.append(Bucket(second: second, count: 1))
        }
    }

    /// Seconds from `now` until fewer than `limit` requests are counted, at least 1 and at
    /// most 60 (60 too when `limit` is 0 and no wait would help).
    func secondsUntilBelow(limit: Int, now: Instant) -> Int {
        var counted = count
        for bucket in buckets {
            counted -= bucket.count
            if counted < limit {
                return clamp(secondsUntilExpiry(of: bucket.second, now: now), lowest: 1)
            }
        }
        return Int(Self.length)
    }

    /// Seconds from `now` until no request is counted any more (0 when none is).
    func secondsUntilEmpty(now: Instant) -> Int {
        guard let newest = buckets.last else { return 0 }
        return clamp(secondsUntilExpiry(of: newest.second, now: now), lowest: 0)
    }

    private func secondsUntilExpiry(of second: Int64, now: Instant) -> Double {
        (Double(second + Self.length) - now.secondsSinceEpoch).rounded(.up)
    }

    private func clamp(_ seconds: Double, lowest: Int) -> Int {
        min(Int(Self.length), max(lowest, Int(seconds)))
    }
}
