/// The attempts of one call through the pool, in order, retries and fallbacks included: what
/// the pool gives back whether the call answered or failed (the last one answered, or failed last).
package struct UpstreamAttempts: Sendable, Equatable {
    package private(set) var targets: [UpstreamPool.Target] = []

    package init() {}

    package var count: Int { targets.count }
    package var last: UpstreamPool.Target? { targets.last }

    mutating func note(_ target: UpstreamPool.Target) {
        targets.append(target)
    }

    /// `other`'s attempts after these (a repair call after the first).
    package mutating func append(_ other: UpstreamAttempts) {
        targets += other.targets
    }
}
