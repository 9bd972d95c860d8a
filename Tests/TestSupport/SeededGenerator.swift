/// A deterministic generator (a linear congruential one), so a test's failure names an
/// input that can be rebuilt from its seed.
package struct SeededGenerator {
    package var state: UInt64

    package init(state: UInt64) { self.state = state }

    /// A non-negative number below 2^31.
    package mutating func next() -> Int {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        return Int(truncatingIfNeeded: state >> 33)
    }
}
