import EventLoop

/// Reconnect delays: full jitter (uniform from zero) up to a cap that doubles after each failed
/// attempt, from the range's lower bound to its upper bound; a success starts it over.
struct RedisBackoff {
    let range: ClosedRange<Duration>
    private var cap: Duration

    init(_ range: ClosedRange<Duration>) {
        self.range = range
        cap = range.lowerBound
    }

    /// The next delay, and the cap doubled for the one after.
    mutating func next() -> Duration {
        let limit = max(cap.nanosecondsClamped, 1)
        let delay = Duration.nanoseconds(Int64(UInt64.random(in: 0...limit)))
        cap = min(cap * 2, range.upperBound)
        return delay
    }

    mutating func reset() { cap = range.lowerBound }
}
