/// A deterministic generator (a linear congruential one), so a test's failure names an
/// input that can be rebuilt from its seed.
public struct SeededGenerator {
    public var state: UInt64

    public init(state: UInt64) { self.state = state }

    /// A non-negative number below 2^31.
    public mutating func next() -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int(truncatingIfNeeded: state >> 33)
    }
}
