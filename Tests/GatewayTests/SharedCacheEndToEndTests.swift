import EventLoop
import HTTPClient
import Redis
import Synchronization
import TestSupport
import Testing

@testable import Gateway
@testable import Telemetry

/// A Redis client of the test's own, on a loop of its own, to plant and read keys with.
private struct RedisProbe {
    let group: EventLoopGroup
    let client: RedisClient

    init(url: String) async throws {
        group = try EventLoopGroup(loopCount: 1, namePrefix: "redis-probe")
        var configuration = try RedisConfiguration(url: url)
        configuration.timeout = .seconds(2)
        client = RedisClient(configuration: configuration, group: group, scripts: SharedResponseCache.scripts)
        try await client.start()
        // Connected in the background: wait until the server answers, as a loaded machine can
        // take longer than a first command's wait.
        let client = client
        await eventually("redis-server answers PING") { (try? await client.send("PING")) != nil }
    }

    func stop() async {
        await client.stop(deadline: .now().advanced(by: .seconds(1)))
        await group.shutdownGracefully()
    }
}

@Suite("Shared response cache through Redis", .serialized, .timeLimit(.minutes(3)))
struct SharedCacheEndToEndTests {
    static let sample = ProcessEndToEndTests.sample

    /// The cache in `redis` with a time to live; a generous Redis timeout where a slow reply
    /// on a busy machine would be an extra upstream call the test counts.
    static func shared(_ redis: RedisServer, ttl: Duration = .seconds(60), timeout: Duration = .seconds(5)) -> (
        inout GatewayConfiguration
    ) -> Void {
        let url = redis.url
        return { configuration in
            configuration.redis = try? RedisConfiguration(url: url)
            configuration.redis?.timeout = timeout
            configuration.redis?.reconnectBackoff = .milliseconds(10)...(.milliseconds(200))
            configuration.cacheBackend = .redis
            configuration.cacheTimeToLive = ttl
        }
    }

    static func metrics(_ harness: GatewayHarness) async throws -> [String: Double] {
        MetricsEndToEndTests.samples(
            String(
                decoding: try await harness.client.send(HTTPClientRequest(url: harness.base + "/metrics")).body,
                as: UTF8.self))
    }

    @Test("answers another instance's repeat from Redis with X-Cache: HIT, the same result and usage, no upstream call")
    func hitAcrossInstances() async throws {
        let redis = try await RedisServer()
        try await GatewayHarness.with(configure: Self.shared(redis)) { first in
            try await first.peer(configure: Self.shared(redis)) { second in
                let miss = try await first.process(task: "summarize", text: Self.sample)
                #expect(miss.status == 200 && miss.header("X-Cache") == "MISS")
                let hit = try await second.process(task: "summarize", text: Self.sample)
                #expect(hit.status == 200 && hit.header("X-Cache") == "HIT")
                #expect(try Body(hit).result == Body(miss).result)
                #expect(try Body(hit).usage == Body(miss).usage && Body(hit).usage != nil)
                #expect(try Body(hit).requestId != Body(miss).requestId)
                #expect(first.mock.stats.requests == 1)
            }
        }
    }

    @Test("makes one upstream call for identical concurrent requests spread over two instances")
    func singleFlightAcrossInstances() async throws {
        let redis = try await RedisServer()
        try await GatewayHarness.with(configure: Self.shared(redis)) { first in
            try await first.peer(configure: Self.shared(redis)) { second in
                let text = Self.sample + " [mock:latency-ms=600]"
                let answers = try await withThrowingTaskGroup(of: HTTPClientResponse.self) { group in
                    for index in 0..<10 {
                        let gateway = index.isMultiple(of: 2) ? first : second
                        group.addTask { try await gateway.process(task: "titles", text: text) }
                    }
                    var all: [HTTPClientResponse] = []
                    for try await answer in group { all.append(answer) }
                    return all
                }
                #expect(answers.count == 10 && answers.allSatisfy { $0.status == 200 })
                #expect(Set(try answers.map { try Body($0).result }).count == 1)
                #expect(answers.filter { $0.header("X-Cache") == "MISS" }.count == 1)
                #expect(first.mock.stats.requests == 1)
            }
        }
    }

    @Test("makes its own call once a lock whose holder died expires, not at the end of its wait")
    func deadHolder() async throws {
        let redis = try await RedisServer()
        let probe = try await RedisProbe(url: redis.url)
        let key = ResponseCache.Key(task: "summarize", tone: nil, model: "test-model", text: Self.sample)
        try await GatewayHarness.with(configure: Self.shared(redis)) { harness in
            // A lock as a holder leaves it when it dies mid-call: nobody will store or release it.
            // Set once the gateway is up, so its start does not eat into the lock's life; the
            // clock starts before it is set, so the lock lives at least 1.5 s of what is measured.
            let start = MonotonicInstant.now()
            _ = try await probe.client.send([
                "SET", RedisArgument(SharedResponseCache.entryKey(key) + ":lock"), "gone", "PX", "1500",
            ])
            let answer = try await harness.process(task: "summarize", text: Self.sample)
            let waited = Duration.nanoseconds(start.nanoseconds(until: .now()))
            #expect(answer.status == 200 && answer.header("X-Cache") == "MISS")
            #expect(harness.mock.stats.requests == 1)
            #expect(waited >= .milliseconds(1500), "it waited for the holder")
            // The wait's limit is the upstream timeout: answering before it means the lock's
            // end was seen.
            let limit = harness.running.gateway.configuration.upstreamTimeout
            #expect(waited < limit, "it saw the lock end rather than waiting out its limit")
            #expect(
                try await probe.client.send(["EXISTS", RedisArgument(SharedResponseCache.entryKey(key))]).integer == 1)
        }
        await probe.stop()
    }

    @Test("aborts the upstream call when the only client goes, and gives the lock back")
    func cancellation() async throws {
        let redis = try await RedisServer()
        let probe = try await RedisProbe(url: redis.url)
        let text = Self.sample + " [mock:latency-ms=10000]"
        let lock = RedisArgument(
            SharedResponseCache.entryKey(
                ResponseCache.Key(task: "summarize", tone: nil, model: "test-model", text: text)) + ":lock")
        try await GatewayHarness.with(configure: Self.shared(redis)) { harness async throws in
            let call = Task { try await harness.process(task: "summarize", text: text) }
            await eventually("the upstream has the call") { harness.mock.stats.inFlight == 1 }
            #expect(try await probe.client.send(["EXISTS", lock]).integer == 1)
            call.cancel()
            await eventually("the upstream's call is cancelled") { harness.mock.stats.cancelled == 1 }
            await eventually("the call's lock is gone from Redis") {
                (try? await probe.client.send(["EXISTS", lock]).integer) == 0
            }
        }
        await probe.stop()
    }

    @Test("keeps answering with Redis down, counting the errors, and shares again once it is back")
    func redisDownAndBack() async throws {
        let redis = try await RedisServer()
        try await GatewayHarness.with(configure: Self.shared(redis, timeout: .milliseconds(200))) { first in
            try await first.peer(configure: Self.shared(redis, timeout: .milliseconds(200))) { second in
                redis.kill()
                let down = try await first.process(task: "rewrite", text: Self.sample)
                #expect(down.status == 200 && down.header("X-Cache") == "MISS")
                // The in-process cache still answers this instance's repeats.
                #expect(try await first.process(task: "rewrite", text: Self.sample).header("X-Cache") == "HIT")
                #expect(try await second.process(task: "rewrite", text: Self.sample).status == 200)
                #expect(first.mock.stats.requests == 2)
                let counted = try await Self.metrics(first)
                #expect(counted[#"textgateway_cache_redis_errors_total{operation="lookup"}"#] == 1)

                try await redis.start()
                var attempt = 0
                await eventually("the second instance answers from the shared cache again") {
                    attempt += 1
                    let text = Self.sample + " \(attempt)"
                    guard (try? await first.process(task: "rewrite", text: text).status) == 200 else { return false }
                    return (try? await second.process(task: "rewrite", text: text).header("X-Cache")) == "HIT"
                }
            }
        }
    }

    @Test("lets an entry expire with its time to live, under a key that holds no text")
    func expiry() async throws {
        let redis = try await RedisServer()
        let probe = try await RedisProbe(url: redis.url)
        try await GatewayHarness.with(configure: Self.shared(redis, ttl: .seconds(1))) { first in
            try await first.peer(configure: Self.shared(redis, ttl: .seconds(1))) { second in
                #expect(try await first.process(task: "key-points", text: Self.sample).header("X-Cache") == "MISS")
                let keys = try await probe.client.send(["KEYS", "tg:cache:*"]).array?.compactMap(\.string) ?? []
                #expect(keys.count == 1)
                let hex = keys.first?.dropFirst("tg:cache:".count) ?? ""
                #expect(hex.count == 64 && hex.allSatisfy(\.isHexDigit))
                let remaining = try await probe.client.send(["PTTL", RedisArgument(keys.first ?? "")]).integer ?? 0
                #expect(remaining > 0 && remaining <= 1000)
                #expect(try await second.process(task: "key-points", text: Self.sample).header("X-Cache") == "HIT")
                await eventually("the entry expires: a MISS") {
                    (try? await second.process(task: "key-points", text: Self.sample).header("X-Cache")) == "MISS"
                }
                #expect(first.mock.stats.requests == 2)
            }
        }
        await probe.stop()
    }
}

@Suite("Shared response cache's lock", .serialized, .timeLimit(.minutes(2)))
struct SharedCacheLockTests {
    static let key = ResponseCache.Key(task: "titles", tone: "short", model: "m", text: "a text of some length")

    /// Two instances' caches over one Redis, with a lock short beside the calls (long enough
    /// that a renewal delayed by a loaded machine still lands in time), and a waiter that waits
    /// a minute for the holder before it calls itself.
    fileprivate static func instances(_ probe: RedisProbe, lock: Duration = .milliseconds(200)) -> (
        SharedResponseCache, SharedResponseCache
    ) {
        func make() -> SharedResponseCache {
            SharedResponseCache(
                redis: probe.client, local: ResponseCache(timeToLive: .seconds(60), capacity: 10), lockTimeToLive: lock,
                waitLimit: .seconds(60), registry: MetricsRegistry()
            )
        }
        return (make(), make())
    }

    @Test("a live holder renews its lock: a call longer than the lock is still made once")
    func renewal() async throws {
        let redis = try await RedisServer()
        let probe = try await RedisProbe(url: redis.url)
        // A lock long beside a loaded machine's scheduling delays: renewed every 4 s, it lapses
        // only if a renewal is 8 s late (4 s was not enough with every core busy).
        let (first, second) = Self.instances(probe, lock: .seconds(12))
        let lock = RedisArgument(SharedResponseCache.entryKey(Self.key) + ":lock")
        let calls = Atomic<Int>(0)
        let holding = Atomic<Bool>(false)
        let compute: @Sendable () async throws(GatewayError) -> ResponseCache.Answer = { () throws(GatewayError) in
            calls.add(1, ordering: .relaxed)
            holding.store(true, ordering: .relaxed)
            // The call lasts until Redis shows the lock renewed three times (its time to live
            // rose three times): past the lock's first life by the holder's renewals alone.
            var renewals = 0
            var last = Int64.max
            while renewals < 3 {
                guard let left = try? await probe.client.send(["PTTL", lock]).integer, left > 0 else { break }
                if left > last { renewals += 1 }
                last = left
                try? await Task.sleep(for: .milliseconds(20))
            }
            return ResponseCache.Answer(result: renewals == 3 ? "once" : "lapsed", usage: nil)
        }
        async let one = first.answer(for: Self.key, compute: compute)
        // The second asks once the first holds the lock, so it waits on a held lock.
        await eventually("the lock is held") { holding.load(ordering: .relaxed) }
        async let two = second.answer(for: Self.key, compute: compute)
        let answers = try await [one, two]
        #expect(calls.load(ordering: .relaxed) == 1)
        #expect(answers.map(\.answer.result) == ["once", "once"])
        #expect(answers.filter(\.hit).count == 1)
        await probe.stop()
    }

    @Test("a waiter makes its own call when the holder's call fails")
    func holderFails() async throws {
        let redis = try await RedisServer()
        let probe = try await RedisProbe(url: redis.url)
        let (first, second) = Self.instances(probe)
        let holding = Atomic<Bool>(false)
        let failed = Task {
            _ = try await first.answer(for: Self.key) { () throws(GatewayError) in
                holding.store(true, ordering: .relaxed)
                // The holder's call, in flight while the other waits for it.
                try? await Task.sleep(for: .milliseconds(300))
                throw GatewayError.upstreamTimeout
            }
        }
        await eventually("the lock is held") { holding.load(ordering: .relaxed) }
        let own = try await second.answer(for: Self.key) { () throws(GatewayError) in
            ResponseCache.Answer(result: "own", usage: nil)
        }
        #expect(own.answer.result == "own" && !own.hit)
        do {
            try await failed.value
            Issue.record("the holder's call was to fail")
        } catch {
            #expect(error as? GatewayError == .upstreamTimeout)
        }
        await probe.stop()
    }

    @Test("shares no answer larger than the bound")
    func valueBound() {
        #expect(SharedResponseCache.encode(ResponseCache.Answer(result: "short", usage: nil)) != nil)
        let large = String(repeating: "x", count: SharedResponseCache.maximumValueBytes + 1)
        #expect(SharedResponseCache.encode(ResponseCache.Answer(result: large, usage: nil)) == nil)
    }
}
