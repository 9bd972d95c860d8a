import Testing

@testable import Tracing

@Suite("Sampler (OTEL_TRACES_SAMPLER)")
struct SamplerTests {
    @Test("the SDK's names and their argument")
    func names() {
        #expect(Sampler(name: "always_on", argument: nil) == .alwaysOn)
        #expect(Sampler(name: "always_off", argument: "0.5") == .alwaysOff, "an argument it does not use is ignored")
        #expect(Sampler(name: "traceidratio", argument: "0.25") == .ratio(0.25))
        #expect(Sampler(name: "traceidratio", argument: "0") == .ratio(0))
        #expect(Sampler(name: "traceidratio", argument: "1") == .ratio(1))
        #expect(Sampler(name: "traceidratio", argument: nil) == .ratio(1), "the argument defaults to 1.0")
        #expect(Sampler(name: "traceidratio", argument: "") == .ratio(1))
        #expect(Sampler(name: "parentbased_always_on", argument: nil) == .parentBased(root: .alwaysOn))
        #expect(Sampler(name: "parentbased_always_off", argument: nil) == .parentBased(root: .alwaysOff))
        #expect(Sampler(name: "parentbased_traceidratio", argument: "0.1") == .parentBased(root: .ratio(0.1)))
        #expect(Sampler(name: "parentbased_traceidratio", argument: nil) == .parentBased(root: .ratio(1)))
    }

    @Test(
        "an unknown name or a ratio outside 0…1 is none",
        arguments: [
            ("always_sometimes", nil), ("ALWAYS_ON", nil), ("", nil), ("jaeger_remote", nil),
            ("traceidratio", "1.5"), ("traceidratio", "-0.1"), ("traceidratio", "half"), ("traceidratio", "nan"),
            ("traceidratio", "inf"), ("parentbased_traceidratio", "2"), ("parentbased_traceidratio", "x"),
        ] as [(String, String?)])
    func refused(name: String, argument: String?) {
        #expect(Sampler(name: name, argument: argument) == nil)
    }

    @Test("a ratio of 0.25 keeps about a quarter of random traces")
    func ratioShare() {
        let sampler = Sampler.ratio(0.25)
        let count = 20_000
        let kept = (0..<count).filter { _ in sampler.shouldSample(.random(), parentSampled: nil) }.count
        // 5,000 expected, standard deviation about 61: ±400 (2 %) is over 6 of them, so a
        // failure means a wrong share, not bad luck.
        #expect(abs(kept - 5_000) <= 400, "kept \(kept) of \(count)")
    }

    @Test("the decision is the trace id's alone: the same id gets the same answer, whoever asks")
    func decisionFollowsTheID() {
        let sampler = Sampler.ratio(0.5)
        for _ in 0..<1000 {
            let id = TraceID.random()
            let first = sampler.shouldSample(id, parentSampled: nil)
            #expect(sampler.shouldSample(id, parentSampled: nil) == first)
            #expect(Sampler.ratio(0.5).shouldSample(TraceID(high: id.high, low: id.low), parentSampled: nil) == first)
            #expect(Sampler.parentBased(root: .ratio(0.5)).shouldSample(id, parentSampled: nil) == first)
        }
        // A lower ratio keeps a subset of what a higher one keeps (one threshold on the id).
        for _ in 0..<1000 {
            let id = TraceID.random()
            if Sampler.ratio(0.1).shouldSample(id, parentSampled: nil) {
                #expect(Sampler.ratio(0.3).shouldSample(id, parentSampled: nil))
            }
        }
        // Only the last 56 bits (W3C's random part) count: the high half and the top byte do not.
        let low = TraceID(high: 0, low: 0x0000_0000_0000_0001)
        let lowTopByte = TraceID(high: .max, low: 0xff00_0000_0000_0001)
        let highest = TraceID(high: 0, low: 0x00ff_ffff_ffff_ffff)
        #expect(Sampler.ratio(0.01).shouldSample(low, parentSampled: nil))
        #expect(Sampler.ratio(0.01).shouldSample(lowTopByte, parentSampled: nil))
        #expect(!Sampler.ratio(0.99).shouldSample(highest, parentSampled: nil))
    }

    @Test("a ratio of 0 keeps none, 1 keeps all")
    func ratioBounds() {
        let ids =
            (0..<2000).map { _ in TraceID.random() } + [
                TraceID(high: 0, low: 1), TraceID(high: .max, low: .max), TraceID(high: 1, low: 0),
            ]
        #expect(!ids.contains { Sampler.ratio(0).shouldSample($0, parentSampled: nil) })
        #expect(ids.allSatisfy { Sampler.ratio(1).shouldSample($0, parentSampled: nil) })
        #expect(ids.allSatisfy { Sampler.alwaysOn.shouldSample($0, parentSampled: nil) })
        #expect(!ids.contains { Sampler.alwaysOff.shouldSample($0, parentSampled: nil) })
        // A plain ratio ignores a parent's flag.
        #expect(!Sampler.ratio(0).shouldSample(ids[0], parentSampled: true))
    }

    @Test("parent-based follows the parent's flag either way, and asks its root only without a parent")
    func parentBased() {
        let id = TraceID.random()
        for root in [Sampler.alwaysOn, .alwaysOff, .ratio(0), .ratio(1)] {
            let sampler = Sampler.parentBased(root: root)
            #expect(sampler.shouldSample(id, parentSampled: true))
            #expect(!sampler.shouldSample(id, parentSampled: false))
            #expect(sampler.shouldSample(id, parentSampled: nil) == root.shouldSample(id, parentSampled: nil))
        }
        #expect(Sampler.parentBased(root: .alwaysOn).shouldSample(id, parentSampled: nil))
        #expect(!Sampler.parentBased(root: .alwaysOff).shouldSample(id, parentSampled: nil))
    }
}
