import ChatAPI
import EventLoop
import Synchronization
import TestSupport
import Testing

@testable import Telemetry
@testable import Upstream

/// The pool's policy against endpoints scripted to fail: which upstream each attempt goes to,
/// how long it waits between them, and when it gives up.
@Suite("Upstream pool: retries, fallback and circuits")
struct UpstreamPoolTests {
    /// Answers each call with the next scripted result (the last one repeats), and records
    /// what it was called with.
    final class ScriptedEndpoint: ChatUpstream {
        enum Step: Sendable {
            case answer
            case fail(ChatError)
            /// Waits until the attempt's time is up, then fails as a timeout.
            case hang
        }

        let steps: Mutex<[Step]>
        let calls = Mutex<[(body: String, limit: Duration)]>([])
        init(_ steps: [Step]) { self.steps = Mutex(steps) }

        var callCount: Int { calls.withLock { $0.count } }

        func call(body: [UInt8], limit: Duration) async throws(ChatError) -> String {
            calls.withLock { $0.append((String(decoding: body, as: UTF8.self), limit)) }
            let step = steps.withLock { steps in steps.count > 1 ? steps.removeFirst() : steps[0] }
            switch step {
            case .answer: return "answered"
            case .fail(let error): throw error
            case .hang:
                do {
                    // A hung upstream: the attempt's whole time passes.
                    try await Task.sleep(for: limit)
                } catch {
                    throw .cancelled
                }
                throw .timedOut
            }
        }

        func complete(body: [UInt8], requestID: String?, timeout: Duration?) async throws(ChatError) -> ChatCompletion {
            throw .noContent
        }
        func forward(body: [UInt8], requestID: String?, timeout: Duration?) async throws(ChatError) -> [UInt8] {
            throw .noContent
        }
        func streamBytes(body: [UInt8], requestID: String, timeout: Duration, headTimeout: Duration?)
            async throws(ChatError) -> any UpstreamBytes
        { throw .noContent }
    }

    /// Records each backoff instead of waiting it out.
    final class Waits: Sendable {
        let values = Mutex<[Duration]>([])
        var all: [Duration] { values.withLock { $0 } }
    }

    static func pool(
        _ endpoints: [(String, ScriptedEndpoint)], policy: UpstreamPolicy = UpstreamPolicy(),
        deadline: Duration = .seconds(60),
        waits: Waits = Waits(), logs: LogSink = .memory(), registry: MetricsRegistry = MetricsRegistry(),
        models: [String: String?] = [:]
    ) -> UpstreamPool {
        UpstreamPool(
            members: endpoints.map { name, endpoint in
                let model: String? = models.keys.contains(name) ? models[name] ?? nil : "model-\(name)"
                return (
                    UpstreamSettings(name: name, baseURL: "http://127.0.0.1:1", apiKey: "k", defaultModel: model),
                    endpoint
                )
            },
            policy: policy, deadline: deadline, metrics: UpstreamMetrics(registry: registry),
            logger: Logger(level: .info, sink: logs),
            sleep: { duration in waits.values.withLock { $0.append(duration) } }
        )
    }

    /// One call through the pool: the answer or the error, and the upstreams attempted in order.
    static func call(_ pool: UpstreamPool) async -> (result: Result<String, ChatError>, attempts: [String]) {
        var attempts = UpstreamAttempts()
        do throws(ChatError) {
            let answer = try await pool.run(
                .task(.summarize), requestID: "r", attempts: &attempts,
                body: { Array("\($0.upstream):\($0.model)".utf8) },
                call: { endpoint, body, limit, _ throws(ChatError) in
                    try await (endpoint as! ScriptedEndpoint).call(body: body, limit: limit)
                }
            )
            return (.success(answer), attempts.targets.map(\.upstream))
        } catch {
            return (.failure(error), attempts.targets.map(\.upstream))
        }
    }

    static func status(_ result: Result<String, ChatError>) -> Int? {
        if case .failure(.httpStatus(let status, _, _)) = result { return status }
        return nil
    }

    @Test("a healthy first upstream answers at once, asked for its own model")
    func healthy() async {
        let first = ScriptedEndpoint([.answer])
        let second = ScriptedEndpoint([.answer])
        let (result, attempts) = await Self.call(Self.pool([("a", first), ("b", second)]))
        #expect((try? result.get()) == "answered")
        #expect(attempts == ["a"])
        #expect(first.calls.withLock { $0.map(\.body) } == ["a:model-a"])
        #expect(second.callCount == 0)
    }

    @Test(
        "every retryable failure is tried again on the same upstream, with full-jitter backoff below doubling ceilings")
    func retriesRetryable() async {
        let failures: [ChatError] = [
            .couldNotConnect(detail: "refused"), .timedOut, .httpStatus(500, error: nil, retryAfter: nil),
            .httpStatus(502, error: nil, retryAfter: nil),
            .httpStatus(503, error: nil, retryAfter: nil), .httpStatus(504, error: nil, retryAfter: nil),
            .httpStatus(429, error: nil, retryAfter: nil),
            .transport(detail: "connection lost mid-answer"),
        ]
        for failure in failures {
            let endpoint = ScriptedEndpoint([.fail(failure), .fail(failure), .answer])
            let waits = Waits()
            let (result, attempts) = await Self.call(Self.pool([("a", endpoint)], waits: waits))
            #expect((try? result.get()) == "answered", "\(failure)")
            #expect(attempts == ["a", "a", "a"], "\(failure)")
            #expect(waits.all.count <= 2)
            for (index, wait) in waits.all.enumerated() {
                #expect(wait <= .milliseconds(100 << index), "backoff \(index) of \(failure): \(wait)")
            }
        }
    }

    @Test("a failure that says the request is wrong is answered at once: no retry, no fallback")
    func notRetried() async {
        let failures: [ChatError] = [
            .httpStatus(400, error: nil, retryAfter: nil), .httpStatus(401, error: nil, retryAfter: nil),
            .httpStatus(
                400, error: UpstreamErrorBody(message: nil, type: nil, code: "context_length_exceeded"), retryAfter: nil
            ),
            .unreadableBody, .noContent,
        ]
        for failure in failures {
            let first = ScriptedEndpoint([.fail(failure)])
            let second = ScriptedEndpoint([.answer])
            let (result, attempts) = await Self.call(Self.pool([("a", first), ("b", second)]))
            guard case .failure = result else {
                Issue.record("\(failure) was answered")
                continue
            }
            #expect(attempts == ["a"], "\(failure)")
            #expect(second.callCount == 0)
        }
    }

    @Test("after its retries an upstream's failure moves the call to the next upstream, which answers")
    func fallsBack() async {
        let first = ScriptedEndpoint([.fail(.httpStatus(503, error: nil, retryAfter: nil))])
        let second = ScriptedEndpoint([.answer])
        let registry = MetricsRegistry()
        let (result, attempts) = await Self.call(Self.pool([("a", first), ("b", second)], registry: registry))
        #expect((try? result.get()) == "answered")
        #expect(attempts == ["a", "a", "a", "b"])
        #expect(second.calls.withLock { $0.map(\.body) } == ["b:model-b"])
        let text = registry.exposition()
        #expect(text.contains(#"textgateway_upstream_attempts_total{upstream="a",result="busy"} 3"#))
        #expect(text.contains(#"textgateway_upstream_attempts_total{upstream="b",result="ok"} 1"#))
        #expect(text.contains(#"textgateway_upstream_retries_total{upstream="a"} 2"#))
        #expect(text.contains(#"textgateway_upstream_fallbacks_total{upstream="a"} 1"#))
    }

    @Test(
        "Retry-After within the limit is waited exactly; a longer one tries the next upstream, or is the last's answer"
    )
    func retryAfter() async {
        let short = ScriptedEndpoint([.fail(.httpStatus(503, error: nil, retryAfter: "2")), .answer])
        let waits = Waits()
        let (result, attempts) = await Self.call(Self.pool([("a", short)], waits: waits))
        #expect((try? result.get()) == "answered")
        #expect(attempts == ["a", "a"])
        #expect(waits.all == [.seconds(2)])

        let long = ScriptedEndpoint([.fail(.httpStatus(429, error: nil, retryAfter: "30"))])
        let other = ScriptedEndpoint([.answer])
        let longWaits = Waits()
        let (fallback, fallbackAttempts) = await Self.call(Self.pool([("a", long), ("b", other)], waits: longWaits))
        #expect((try? fallback.get()) == "answered")
        #expect(fallbackAttempts == ["a", "b"])
        #expect(longWaits.all.isEmpty)

        let alone = ScriptedEndpoint([.fail(.httpStatus(503, error: nil, retryAfter: "30"))])
        let (busy, busyAttempts) = await Self.call(Self.pool([("a", alone)]))
        #expect(busyAttempts == ["a"])
        guard case .failure(.httpStatus(503, _, let retryAfter)) = busy else {
            Issue.record("expected the upstream's 503, got \(busy)")
            return
        }
        #expect(retryAfter == "30")
    }

    @Test("UPSTREAM_RETRIES=0 moves on after one failure")
    func noRetries() async {
        var policy = UpstreamPolicy()
        policy.retries = 0
        let first = ScriptedEndpoint([.fail(.couldNotConnect(detail: "refused"))])
        let second = ScriptedEndpoint([.answer])
        let (_, attempts) = await Self.call(Self.pool([("a", first), ("b", second)], policy: policy))
        #expect(attempts == ["a", "b"])
    }

    @Test("an upstream without a model for the task is passed over")
    func noModel() async {
        let first = ScriptedEndpoint([.answer])
        let second = ScriptedEndpoint([.answer])
        let (result, attempts) = await Self.call(Self.pool([("a", first), ("b", second)], models: ["a": String?.none]))
        #expect((try? result.get()) == "answered")
        #expect(attempts == ["b"])
    }

    @Test("each attempt gets at most the try timeout, and all attempts together stay within the deadline")
    func deadline() async {
        var policy = UpstreamPolicy()
        policy.tryTimeout = .milliseconds(40)
        policy.retries = 100
        policy.breakerFailures = 1000
        policy.backoff = .milliseconds(1)
        let endpoint = ScriptedEndpoint([.hang])
        let (result, attempts) = await Self.call(
            Self.pool([("a", endpoint)], policy: policy, deadline: .milliseconds(400)))
        guard case .failure(.timedOut) = result else {
            Issue.record("expected a timeout, got \(result)")
            return
        }
        let limits = endpoint.calls.withLock { $0.map(\.limit) }
        // How many attempts fit depends on the machine's load; what each may take does not.
        #expect(!attempts.isEmpty)
        #expect(limits.allSatisfy { $0 <= .milliseconds(40) })
        #expect(limits.reduce(.zero, +) <= .milliseconds(400))
    }

    @Test(
        "consecutive failures open the circuit: the upstream is skipped; a probe after the cooldown closes it again"
    )
    func circuit() async throws {
        var policy = UpstreamPolicy()
        policy.retries = 0
        policy.breakerFailures = 3
        policy.cooldown = .seconds(2)
        let first = ScriptedEndpoint([
            .fail(.couldNotConnect(detail: "refused")), .fail(.couldNotConnect(detail: "refused")),
            .fail(.couldNotConnect(detail: "refused")), .answer,
        ])
        let second = ScriptedEndpoint([.answer])
        let logs = LogSink.memory()
        let registry = MetricsRegistry()
        let pool = Self.pool([("a", first), ("b", second)], policy: policy, logs: logs, registry: registry)
        for _ in 0..<3 {
            let (_, attempts) = await Self.call(pool)
            #expect(attempts == ["a", "b"])
        }
        #expect(pool.members[0].breaker.state == .open)
        #expect(registry.exposition().contains(#"textgateway_upstream_circuit_state{upstream="a"} 1"#))
        #expect(logs.lines.contains { $0.contains("upstream_circuit_open") && $0.contains("upstream=a") })
        let (_, skipping) = await Self.call(pool)
        #expect(skipping == ["b"])
        #expect(first.callCount == 3)

        await eventually("a call goes to a again, alone") {
            let (_, attempts) = await Self.call(pool)
            return attempts == ["a"]
        }
        #expect(pool.members[0].breaker.state == .closed)
        #expect(registry.exposition().contains(#"textgateway_upstream_circuit_state{upstream="a"} 0"#))
        #expect(logs.lines.contains { $0.contains("upstream_circuit_closed") && $0.contains("upstream=a") })
    }

    @Test("a failed probe opens the circuit again for another cooldown")
    func failedProbe() async throws {
        var policy = UpstreamPolicy()
        policy.retries = 0
        policy.breakerFailures = 1
        policy.cooldown = .seconds(1)
        let first = ScriptedEndpoint([.fail(.httpStatus(502, error: nil, retryAfter: nil))])
        let second = ScriptedEndpoint([.answer])
        let pool = Self.pool([("a", first), ("b", second)], policy: policy)
        _ = await Self.call(pool)
        #expect(pool.members[0].breaker.state == .open)
        await eventually("the open circuit lets a probe through") { pool.members[0].breaker.admit() == .probe }
        pool.members[0].breaker.failed()
        #expect(pool.members[0].breaker.state == .open)
        let (_, attempts) = await Self.call(pool)
        #expect(attempts == ["b"])
    }

    @Test(
        "with every circuit open, the first upstream gets one attempt without retries; its answer closes the circuit"
    )
    func allOpen() async {
        var policy = UpstreamPolicy()
        policy.breakerFailures = 3
        policy.cooldown = .seconds(60)
        let first = ScriptedEndpoint([.fail(.couldNotConnect(detail: "refused"))])
        let second = ScriptedEndpoint([.fail(.couldNotConnect(detail: "refused"))])
        let pool = Self.pool([("a", first), ("b", second)], policy: policy)
        let (_, opening) = await Self.call(pool)
        #expect(opening == ["a", "a", "a", "b", "b", "b"])
        #expect(pool.members.allSatisfy { $0.breaker.state == .open })
        let (result, attempts) = await Self.call(pool)
        #expect(attempts == ["a"])
        guard case .failure(.couldNotConnect) = result else {
            Issue.record("expected the connect failure, got \(result)")
            return
        }
        first.steps.withLock { $0 = [.answer] }
        let (answer, recovered) = await Self.call(pool)
        #expect((try? answer.get()) == "answered")
        #expect(recovered == ["a"])
        #expect(pool.members[0].breaker.state == .closed)
        #expect(pool.members[1].breaker.state == .open)
    }

    @Test("a call cancelled during its backoff stops there: no further attempt")
    func cancelledDuringBackoff() async {
        let endpoint = ScriptedEndpoint([.fail(.httpStatus(503, error: nil, retryAfter: "3"))])
        let pool = UpstreamPool(
            members: [
                (UpstreamSettings(name: "a", baseURL: "http://127.0.0.1:1", apiKey: "k", defaultModel: "m"), endpoint)
            ],
            policy: UpstreamPolicy(), deadline: .seconds(60), metrics: UpstreamMetrics(registry: MetricsRegistry()),
            logger: Logger(level: .info, sink: .memory())
        )
        let task = Task { await Self.call(pool) }
        await eventually("the endpoint has the call") { endpoint.callCount == 1 }
        task.cancel()
        let (result, _) = await task.value
        guard case .failure(.cancelled) = result else {
            Issue.record("expected cancelled, got \(result)")
            return
        }
        #expect(endpoint.callCount == 1)
    }

    @Test("Retry-After is read as whole seconds only")
    func retryAfterParsing() {
        #expect(UpstreamPool.retryAfterSeconds("0") == 0)
        #expect(UpstreamPool.retryAfterSeconds("17") == 17)
        #expect(UpstreamPool.retryAfterSeconds("1.5") == nil)
        #expect(UpstreamPool.retryAfterSeconds("-1") == nil)
        #expect(UpstreamPool.retryAfterSeconds("Wed, 21 Oct 2026 07:28:00 GMT") == nil)
        #expect(UpstreamPool.retryAfterSeconds("") == nil)
        #expect(UpstreamPool.retryAfterSeconds("9999999999") == nil)
    }
}
