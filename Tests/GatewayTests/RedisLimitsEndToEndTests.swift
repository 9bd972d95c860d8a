import EventLoop
import Gateway
import HTTPClient
import Redis
import TestSupport
import Testing

@testable import Access
@testable import Telemetry

#if canImport(Glibc)
    import Glibc
#endif

/// Several gateways sharing one redis-server: limits that hold across them exactly, leases of
/// an instance killed with SIGKILL that expire, and Redis going away and coming back.
@Suite("Limits shared across gateway instances through Redis", .serialized, .timeLimit(.minutes(3)))
struct RedisLimitsEndToEndTests {
    static let sample = ProcessEndToEndTests.sample

    /// `count` gateways on one redis-server, each on one loop (one Redis connection): the
    /// harness's and `count - 1` more of its configuration, sharing its mock and client. The
    /// Redis timeout is generous, so a loaded machine's slow reply is never taken for Redis away.
    static func withInstances(
        _ count: Int, plans: String, redis: RedisServer, timeout: Duration = .seconds(2),
        configure: @escaping (inout GatewayConfiguration) -> Void = { _ in },
        _ body: ([GatewayHarness]) async throws -> Void
    ) async throws {
        try await GatewayHarness.with(configure: {
            try? AccessEndToEndTests.configure(plans: plans, &$0)
            $0.redis = try? RedisConfiguration(url: redis.url)
            $0.redis?.timeout = timeout
            $0.loopCount = 1
            configure(&$0)
        }) { first in
            var instances = [first]
            do {
                for _ in 1..<count {
                    let logs = LogSink.memory()
                    let running = try await GatewayServer.start(
                        configuration: first.running.gateway.configuration, logger: Logger(level: .debug, sink: logs))
                    instances.append(
                        GatewayHarness(
                            mock: first.mock, running: running, client: first.client, logs: logs,
                            base: "http://127.0.0.1:\(running.address?.port ?? 0)", ownsMock: false))
                }
                try await body(instances)
            } catch {
                for other in instances.dropFirst() { await other.running.stop() }
                throw error
            }
            for other in instances.dropFirst() { await other.running.stop() }
        }
    }

    /// `count` requests of alice at once, the i-th to instance i mod n: their responses.
    static func burst(_ count: Int, over instances: [GatewayHarness], text: String = sample) async throws
        -> [HTTPClientResponse]
    {
        try await withThrowingTaskGroup(of: HTTPClientResponse.self) { group in
            for index in 0..<count {
                let instance = instances[index % instances.count]
                group.addTask {
                    try await instance.process(task: "summarize", text: text, headers: AccessEndToEndTests.bearer())
                }
            }
            var responses: [HTTPClientResponse] = []
            for try await response in group { responses.append(response) }
            return responses
        }
    }

    static func metrics(_ instance: GatewayHarness) async throws -> String {
        String(
            decoding: try await instance.client.send(HTTPClientRequest(url: instance.base + "/metrics")).body,
            as: UTF8.self)
    }

    static func redisUp(_ instance: GatewayHarness) async -> Bool? {
        guard let text = try? await metrics(instance) else { return nil }
        if text.contains("\ntextgateway_redis_up 1\n") { return true }
        if text.contains("\ntextgateway_redis_up 0\n") { return false }
        return nil
    }

    @Test(
        "a plan of 10 a minute answers exactly 10 of 30 requests spread over 2 and over 3 gateways", arguments: [2, 3])
    func perMinuteAcrossInstances(instances gateways: Int) async throws {
        let redis = try await RedisServer()
        try await Self.withInstances(gateways, plans: "pro:10:-:-", redis: redis) { instances in
            let responses = try await Self.burst(30, over: instances)
            let answered = responses.filter { $0.status == 200 }.count
            let refused = responses.filter { $0.status == 429 }
            let retryAfters = refused.compactMap { Int($0.header("Retry-After") ?? "") }
            #expect(answered == 10)
            // Each answer reports the shared count it left, never one instance's own.
            let remaining = Set(responses.filter { $0.status == 200 }.compactMap { $0.header("RateLimit-Remaining") })
            #expect(remaining == Set((0..<10).map(String.init)))
            #expect(refused.count == 20)
            #expect(retryAfters.count == 20 && retryAfters.allSatisfy { $0 >= 1 })
            #expect(refused.compactMap { $0.header("RateLimit-Remaining") } == Array(repeating: "0", count: 20))
            for instance in instances {
                #expect(
                    try await Self.metrics(instance).contains(
                        "textgateway_rate_limit_decisions_total{backend=\"redis\"}"))
            }
        }
        redis.kill()
    }

    @Test("a plan of 2 at once runs exactly 2 slow requests across 3 gateways, then frees the slots")
    func concurrencyAcrossInstances() async throws {
        let redis = try await RedisServer()
        try await Self.withInstances(3, plans: "pro:-:2:-", redis: redis) { instances in
            let responses = try await Self.burst(6, over: instances, text: Self.sample + " [mock:latency-ms=1500]")
            #expect(responses.filter { $0.status == 200 }.count == 2)
            #expect(responses.filter { $0.status == 429 }.count == 4)
            #expect(instances[0].mock.stats.requests == 2)
            let after = try await Self.burst(2, over: Array(instances.suffix(2)))
            #expect(after.allSatisfy { $0.status == 200 })
        }
        redis.kill()
    }

    @Test("daily tokens spent on one gateway count on the others")
    func dailyTokensAcrossInstances() async throws {
        let redis = try await RedisServer()
        let quota = 700
        let maxTokens = 50
        try await Self.withInstances(
            3, plans: "pro:-:-:\(quota)", redis: redis, configure: { $0.maxTokens = maxTokens }
        ) { instances in
            let first = try await instances[0].process(
                task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer())
            #expect(first.status == 200)
            let perCall = try #require(try Body(first).usage?.totalTokens)
            var answered = 1
            var refused: HTTPClientResponse?
            for index in 1..<20 {
                let response = try await instances[index % 3].process(
                    task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer())
                guard response.status == 200 else {
                    refused = response
                    break
                }
                answered += 1
            }
            // A call is answered while its worst case (the body's estimate and MAX_TOKENS) fits in
            // what the day has left; its real count then replaces the reservation.
            let body = "{\"task\":\"summarize\",\"text\":\(jsonString(Self.sample))}"
            let worstCase = body.utf8.count / 3 + maxTokens
            #expect(answered == (quota - worstCase) / perCall + 1)
            #expect(refused?.status == 429)
            #expect(Int(refused?.header("Retry-After") ?? "") ?? 0 > 60)
        }
        redis.kill()
    }

    @Test("the leases of a gateway killed with SIGKILL expire, and then another gateway takes the slots")
    func killedInstanceLeasesExpire() async throws {
        let redis = try await RedisServer()
        try await Self.withInstances(1, plans: "pro:-:2:-", redis: redis) { instances in
            let survivor = instances[0]
            let environment = CommandLineProcessTests.baseEnvironment.merging([
                "DARVAREH_API_KEY": upstreamKey, "DARVAREH_MODEL_ID": "m", "DARVAREH_BASE_URL": survivor.mock.baseURL,
                "DATABASE_URL": "off", "EVENT_LOOPS": "1", "REDIS_URL": redis.url, "REDIS_TIMEOUT_MS": "2000",
                "UPSTREAM_TIMEOUT_SECONDS": "2",
                "GATEWAY_TOKENS": "\(TokenStore.hashLine(forToken: AccessEndToEndTests.token)):alice:pro",
                "PLANS": "pro:-:2:-",
            ]) { $1 }
            let doomed = try await StoreProcessTests.Gateway.start(
                environment, directory: CommandLineProcessTests.emptyDirectory())
            let doomedHarness = GatewayHarness(
                mock: survivor.mock, running: survivor.running, client: survivor.client, logs: survivor.logs,
                base: doomed.base, ownsMock: false)
            let held = (0..<2).map { _ in
                Task {
                    try? await doomedHarness.process(
                        task: "summarize", text: Self.sample + " [mock:latency-ms=20000]",
                        headers: AccessEndToEndTests.bearer())
                }
            }
            await eventually("the survivor's upstream has both calls") { survivor.mock.stats.inFlight == 2 }
            doomed.child.signal(SIGKILL)
            #expect(await doomed.child.waitForExit(seconds: 10) == 128 + SIGKILL)
            for task in held { _ = await task.value }
            // Its two slots are still taken, until their time to live (2 s and a margin) ends.
            let refused = try await survivor.process(
                task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer())
            #expect(refused.status == 429)
            var status = 0
            await eventually("the survivor answers 200 (last: \(status))") {
                status =
                    (try? await survivor.process(
                        task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer()))?.status ?? 0
                return status == 200
            }
        }
        redis.kill()
    }

    @Test("a stream that outlives the lease time to live keeps its slot: its gateway renews the lease")
    func longStreamKeepsItsSlot() async throws {
        let redis = try await RedisServer()
        try await Self.withInstances(
            2, plans: "pro:-:1:-", redis: redis, configure: { $0.upstreamTimeout = .seconds(1) }
        ) { instances in
            let text = Self.sample + " [mock:deltas=8,delta-delay-ms=500]"
            let stream = Task {
                try await instances[0].process(
                    "{\"task\":\"summarize\",\"stream\":true,\"text\":\(jsonString(text))}",
                    headers: [("Content-Type", "application/json")] + AccessEndToEndTests.bearer())
            }
            await eventually("the first instance's upstream has the call") { instances[0].mock.stats.inFlight == 1 }
            // Past the lease's time to live (1 s and a margin of 1 s): the slot is still the stream's.
            // Redis's own clock has to pass it; none can be injected there.
            try await Task.sleep(for: .seconds(3))
            #expect(
                try await instances[1].process(
                    task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer()
                ).status == 429)
            let streamed = try await stream.value
            #expect(streamed.status == 200)
            #expect(String(decoding: streamed.body, as: UTF8.self).contains("event: done"))
            // The lease is given back by the finished hook, just after the stream's last bytes.
            await eventually("the second instance answers 200 once the lease is given back") {
                (try? await instances[1].process(
                    task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer()))?.status == 200
            }
        }
        redis.kill()
    }

    @Test(
        "local: with Redis killed, each gateway's own limits answer; Redis restarted, the limits are shared again"
    )
    func localFallbackAndRecovery() async throws {
        let redis = try await RedisServer()
        try await Self.withInstances(2, plans: "pro:10:-:-", redis: redis, timeout: .seconds(30)) { instances in
            #expect(try await Self.burst(2, over: instances).allSatisfy { $0.status == 200 })
            redis.kill()
            for instance in instances {
                await eventually("the instance sees Redis down") { await Self.redisUp(instance) == false }
            }
            for index in 0..<6 {
                let started = MonotonicInstant.now()
                let response = try await instances[index % 2].process(
                    task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer())
                #expect(response.status == 200)
                // Decided at once, not after a reply that cannot come: the timeout is 30 s.
                #expect(started.nanoseconds(until: .now()) < 15_000_000_000)
            }
            for instance in instances {
                #expect(instance.logs.lines.filter { $0.contains("redis_unavailable") }.count == 1)
                #expect(
                    try await Self.metrics(instance).contains(
                        "textgateway_rate_limit_decisions_total{backend=\"local\"} 3"))
            }
            try await redis.start()
            for instance in instances {
                await eventually("the instance sees Redis up again") { await Self.redisUp(instance) == true }
            }
            // The restarted server holds no counts: 10 of the next 30, across both, as before.
            let responses = try await Self.burst(30, over: instances)
            #expect(responses.filter { $0.status == 200 }.count == 10)
            #expect(responses.filter { $0.status == 429 }.count == 20)
            for instance in instances {
                #expect(instance.logs.lines.filter { $0.contains("redis_available") }.count == 1)
            }
        }
        redis.kill()
    }

    @Test("local: a Redis that hangs costs a request at most its timeout, then none until it answers again")
    func hungRedisTimesOut() async throws {
        let redis = try await RedisServer()
        try await Self.withInstances(1, plans: "pro:100:-:-", redis: redis, timeout: .milliseconds(100)) {
            (instances: [GatewayHarness]) async throws in
            let gateway = instances[0]
            #expect(
                try await gateway.process(task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer())
                    .status == 200)
            redis.signal(SIGSTOP)
            for _ in 0..<3 {
                let started = MonotonicInstant.now()
                #expect(
                    try await gateway.process(
                        task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer()
                    ).status == 200)
                // Bounded by the 100 ms timeout, not hung with Redis: generous for a loaded machine.
                #expect(started.nanoseconds(until: .now()) < 20_000_000_000)
            }
            #expect(
                gateway.logs.lines.filter { $0.contains("redis_unavailable") && $0.contains("reason=timeout") }.count
                    == 1)
            #expect(try await Self.metrics(gateway).contains("textgateway_redis_errors_total{kind=\"timeout\"} 1"))
            redis.signal(SIGCONT)
            await eventually("a line says redis_available") {
                _ = try? await gateway.process(
                    task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer())
                return gateway.logs.lines.contains { $0.contains("redis_available") }
            }
        }
        redis.kill()
    }

    @Test("closed: with Redis killed, requests are refused with 503 upstream_busy; restarted, they are answered again")
    func closedRefusesWhileRedisIsAway() async throws {
        let redis = try await RedisServer()
        try await Self.withInstances(1, plans: "pro:10:-:-", redis: redis, configure: { $0.redisFailureMode = .closed })
        { instances in
            let gateway = instances[0]
            #expect(
                try await gateway.process(task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer())
                    .status == 200)
            redis.kill()
            await eventually("the gateway sees Redis down") { await Self.redisUp(gateway) == false }
            let refused = try await gateway.process(
                task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer())
            #expect(refused.status == 503)
            #expect(try Body(refused).code == "upstream_busy")
            try await redis.start()
            var status = 0
            await eventually("the gateway answers 200 again (last: \(status))") {
                status =
                    (try? await gateway.process(
                        task: "summarize", text: Self.sample, headers: AccessEndToEndTests.bearer()))?.status ?? 0
                return status == 200
            }
        }
        redis.kill()
    }
}
