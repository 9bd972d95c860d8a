import EventLoop
import Synchronization
import Testing

@testable import Gateway

@Suite("Memory return after a burst")
struct MemoryReturnTests {
    private static let mib = 1 << 20
    private static let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)

    private static func at(_ seconds: Double) -> MonotonicInstant {
        start.advanced(by: .milliseconds(Int64(seconds * 1000)))
    }

    /// Feeds one observation a second from `from` to `to` (inclusive) and gives the seconds
    /// at which the policy said to return memory; each return leaves the resident set as it
    /// was (as a trim with nothing to give back would).
    private static func run(
        _ policy: inout MemoryReturnPolicy, from: Int, to: Int, inFlight: Int, residentMiB: Int
    ) -> [Int] {
        var returns: [Int] = []
        for second in from...to
        where policy.observe(inFlight: inFlight, residentBytes: residentMiB * mib, at: at(Double(second))) {
            returns.append(second)
            policy.returned(residentBytes: residentMiB * mib)
        }
        return returns
    }

    @Test("returns memory once a burst has been over for the quiet period, then once more after the late delay")
    func burstThenQuiet() {
        var policy = MemoryReturnPolicy()
        let returns1 = Self.run(&policy, from: 0, to: 10, inFlight: 0, residentMiB: 24)
        #expect(returns1.isEmpty)
        // 5,000 in flight for three seconds: the heap grows, nothing is returned under load.
        let returns2 = Self.run(&policy, from: 11, to: 13, inFlight: 5000, residentMiB: 290)
        #expect(returns2.isEmpty)
        #expect(policy.peak == 5000)
        // Quiet from second 14: the return comes at 14 + 5.
        let returns3 = Self.run(&policy, from: 14, to: 18, inFlight: 0, residentMiB: 290)
        #expect(returns3.isEmpty)
        let returnsNow = policy.observe(inFlight: 0, residentBytes: 290 * Self.mib, at: Self.at(19))
        #expect(returnsNow)
        policy.returned(residentBytes: 30 * Self.mib)
        #expect(policy.baseline == 30 * Self.mib)
        #expect(policy.lateReturnAt == Self.at(79))
        // Quiet afterwards: nothing more until the late return, then nothing at all.
        let returns4 = Self.run(&policy, from: 20, to: 78, inFlight: 0, residentMiB: 30)
        #expect(returns4.isEmpty)
        let returns5 = Self.run(&policy, from: 79, to: 400, inFlight: 0, residentMiB: 30)
        #expect(returns5 == [79])
    }

    @Test("the steady traffic a burst ends on counts as quiet; more than an eighth of the peak does not")
    func steadyTrafficAfterBurst() {
        var policy = MemoryReturnPolicy()
        policy.lateReturnDelay = nil
        _ = Self.run(&policy, from: 0, to: 1, inFlight: 0, residentMiB: 24)
        _ = Self.run(&policy, from: 2, to: 3, inFlight: 4000, residentMiB: 250)
        let returns6 = Self.run(&policy, from: 4, to: 60, inFlight: 501, residentMiB: 250)
        #expect(returns6.isEmpty)
        let returns7 = Self.run(&policy, from: 61, to: 70, inFlight: 500, residentMiB: 250)
        #expect(returns7 == [66])
        policy.returned(residentBytes: 60 * Self.mib)
        // The peak starts again from what was in flight at the return: 500 now is not quiet.
        #expect(policy.peak == 500)
        let returns8 = Self.run(&policy, from: 71, to: 200, inFlight: 500, residentMiB: 80)
        #expect(returns8.isEmpty)
    }

    @Test("a busy moment restarts the quiet period")
    func busyRestartsQuiet() {
        var policy = MemoryReturnPolicy()
        _ = Self.run(&policy, from: 0, to: 0, inFlight: 0, residentMiB: 24)
        _ = Self.run(&policy, from: 1, to: 2, inFlight: 1000, residentMiB: 100)
        let returns9 = Self.run(&policy, from: 3, to: 6, inFlight: 2, residentMiB: 100)
        #expect(returns9.isEmpty)
        let returns10 = Self.run(&policy, from: 7, to: 7, inFlight: 900, residentMiB: 100)
        #expect(returns10.isEmpty)
        let returns11 = Self.run(&policy, from: 8, to: 20, inFlight: 0, residentMiB: 100)
        #expect(returns11 == [13])
    }

    @Test("no return without growth: by at least an eighth of the baseline and 2 MiB")
    func growthThreshold() {
        var policy = MemoryReturnPolicy()
        _ = Self.run(&policy, from: 0, to: 0, inFlight: 0, residentMiB: 100)
        // A quiet process whose resident set does not grow is left alone.
        let returns12 = Self.run(&policy, from: 1, to: 100, inFlight: 0, residentMiB: 100)
        #expect(returns12.isEmpty)
        let returns13 = Self.run(&policy, from: 101, to: 200, inFlight: 0, residentMiB: 112)
        #expect(returns13.isEmpty)
        let returns14 = Self.run(&policy, from: 201, to: 201, inFlight: 0, residentMiB: 113)
        #expect(returns14 == [201])

        var small = MemoryReturnPolicy()
        _ = Self.run(&small, from: 0, to: 0, inFlight: 0, residentMiB: 8)
        let returns15 = Self.run(&small, from: 1, to: 20, inFlight: 0, residentMiB: 9)
        #expect(returns15.isEmpty)
        let returns16 = Self.run(&small, from: 21, to: 21, inFlight: 0, residentMiB: 10)
        #expect(returns16 == [21])
    }

    @Test("the baseline follows the resident set down")
    func baselineFollowsDown() {
        var policy = MemoryReturnPolicy()
        _ = Self.run(&policy, from: 0, to: 0, inFlight: 0, residentMiB: 40)
        _ = Self.run(&policy, from: 1, to: 1, inFlight: 0, residentMiB: 20)
        #expect(policy.baseline == 20 * Self.mib)
        let returns17 = Self.run(&policy, from: 2, to: 10, inFlight: 0, residentMiB: 24)
        #expect(returns17 == [5])
    }

    @Test("the returner trims on a thread of its own when the policy says so, and takes the new baseline")
    func returnerTicks() async {
        let state = Mutex((now: Self.start, inFlight: 0, residentMiB: 24, trims: 0))
        let returner = MemoryReturner(
            inFlight: { state.withLock { $0.inFlight } },
            residentBytes: { state.withLock { $0.residentMiB } * Self.mib },
            clock: { state.withLock { $0.now } },
            trim: {
                state.withLock {
                    $0.trims += 1
                    $0.residentMiB = 26
                }
            }
        )
        func tick(second: Int, inFlight: Int, residentMiB: Int) async {
            state.withLock {
                $0.now = Self.at(Double(second))
                $0.inFlight = inFlight
                $0.residentMiB = residentMiB
            }
            await returner.tick()
        }
        await tick(second: 0, inFlight: 0, residentMiB: 24)
        await tick(second: 1, inFlight: 3000, residentMiB: 200)
        for second in 2...6 { await tick(second: second, inFlight: 0, residentMiB: 200) }
        #expect(state.withLock { $0.trims } == 0)
        await tick(second: 7, inFlight: 0, residentMiB: 200)
        #expect(state.withLock { $0.trims } == 1)
        #expect(returner.returnCount == 1)
        // The resident set after the trim is the new baseline: 26 MiB stays.
        for second in 8...60 { await tick(second: second, inFlight: 0, residentMiB: 26) }
        #expect(state.withLock { $0.trims } == 1)
    }
}
