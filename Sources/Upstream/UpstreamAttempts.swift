/// The attempts of one call through the pool, in order, retries and fallbacks included: what
/// the pool gives back whether the call answered or failed (the last one answered, or failed last).
package struct UpstreamAttempts: Sendable, Equatable {
    /// The last attempt's target.
    package private(set) var last: UpstreamPool.Target?
    package private(set) var count = 0
    /// The attempts before the last: empty, and so not allocated, for a call answered at once.
    private var earlier: [UpstreamPool.Target] = []

    package init() {}

    /// Every attempt's target, in order.
    package var targets: [UpstreamPool.Target] { earlier + (last.map { [$0] } ?? []) }

    mutating func note(_ target: UpstreamPool.Target) {
        if let last { earlier.append(last) }
        last = target
        count += 1
    }

    /// `other`'s attempts after these (a repair call after the first).
    package mutating func append(_ other: UpstreamAttempts) {
        for target in other.targets { note(target) }
    }
}
