import EventLoop
import HTTPClient
import Synchronization
import TestSupport
import Testing

@testable import Gateway

/// A monotonic clock a test moves by hand.
final class ManualClock: Sendable {
    private let instant = Mutex(MonotonicInstant.now())
    var now: MonotonicInstant { instant.withLock { $0 } }
    func advance(_ duration: Duration) { instant.withLock { $0 = $0.advanced(by: duration) } }
}

@Suite("Response cache end to end", .serialized)
struct CacheEndToEndTests {
    static let sample = ProcessEndToEndTests.sample

    @Test("answers a repeat from the cache with X-Cache, until the entry expires")
    func hitMissExpiry() async throws {
        let clock = ManualClock()
        try await GatewayHarness.with(configure: {
            $0.cacheTimeToLive = .seconds(3)
            $0.cacheClock = { clock.now }
        }) { harness in
            let first = try await harness.process(task: "summarize", text: Self.sample)
            #expect(first.header("X-Cache") == "MISS")
            let second = try await harness.process(task: "summarize", text: "  " + Self.sample + "\n")
            #expect(second.header("X-Cache") == "HIT")
            #expect(try Body(second).result == Body(first).result)
            #expect(try Body(second).requestId != Body(first).requestId)
            #expect(
                try await harness.process(task: "summarize", text: Self.sample, tone: "formal").header("X-Cache")
                    == "MISS")
            #expect(try await harness.process(task: "rewrite", text: Self.sample).header("X-Cache") == "MISS")
            #expect(harness.mock.stats.requests == 3)
            clock.advance(.milliseconds(2900))
            #expect(try await harness.process(task: "summarize", text: Self.sample).header("X-Cache") == "HIT")
            clock.advance(.milliseconds(100))
            #expect(try await harness.process(task: "summarize", text: Self.sample).header("X-Cache") == "MISS")
            #expect(harness.mock.stats.requests == 4)
        }
    }

    @Test("makes one upstream call for 50 identical concurrent requests")
    func singleFlight() async throws {
        try await GatewayHarness.with(configure: { $0.cacheTimeToLive = .seconds(60) }) { harness in
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<50 {
                    group.addTask {
                        try await harness.process(task: "titles", text: Self.sample + " [mock:latency-ms=300]").status
                    }
                }
                var all: [Int] = []
                for try await status in group { all.append(status) }
                return all
            }
            #expect(statuses.count == 50 && statuses.allSatisfy { $0 == 200 })
            #expect(harness.mock.stats.requests == 1)
        }
    }

    @Test("does not cache failures, and sends no X-Cache when the cache is off")
    func failuresAndOff() async throws {
        try await GatewayHarness.with(configure: {
            $0.cacheTimeToLive = .seconds(60)
            $0.upstreamPolicy.retries = 0 // one upstream call a request, so the count shows no cached failure
        }) { harness async throws in
            #expect(
                try await harness.process(task: "summarize", text: Self.sample + " [mock:status=500]").status == 502)
            #expect(
                try await harness.process(task: "summarize", text: Self.sample + " [mock:status=500]").status == 502)
            #expect(harness.mock.stats.requests == 2)
        }
        try await GatewayHarness.with { harness async throws in
            #expect(try await harness.process(task: "summarize", text: Self.sample).header("X-Cache") == nil)
        }
    }
}
