import ChatAPI
import EventLoop
import Gateway
import HTTPClient
import HTTPServer
import JSON
import MockUpstream
import TestSupport
import Testing

@testable import Upstream

/// The pool against real mock upstreams over loopback, scripted to fail: who answers
/// (`X-Upstream`), how many calls each upstream got, and what the client is told.
@Suite("Upstreams end to end: retries, fallback, cooldown")
struct UpstreamFailoverEndToEndTests {
    /// An upstream of a test: a mock with these defaults, or nil for a port nothing listens on.
    typealias Script = MockBehaviour?

    /// Runs `body` against a gateway whose `UPSTREAMS` are `scripts` in order, named `a`, `b`, ….
    static func with(
        _ scripts: [Script], configure: (inout GatewayConfiguration) -> Void = { _ in },
        _ body: (GatewayHarness, [MockUpstream?]) async throws -> Void
    ) async throws {
        var mocks: [MockUpstream?] = []
        var urls: [String] = []
        // Held until the end: a port released early could be given to another test's mock.
        var refusing: [LoopbackPort.Refusing] = []
        for script in scripts {
            if let script {
                let mock = try await MockUpstream.started(defaults: script, apiKey: upstreamKey)
                mocks.append(mock)
                urls.append(mock.baseURL)
            } else {
                mocks.append(nil)
                let port = try LoopbackPort.Refusing()
                refusing.append(port)
                urls.append("http://127.0.0.1:\(port.port)/v1")
            }
        }
        defer { withExtendedLifetime(refusing) {} }
        do {
            try await GatewayHarness.with(configure: { configuration in
                configuration.upstreams = urls.enumerated().map { index, url in
                    UpstreamSettings(
                        name: String(UnicodeScalar(UInt8(97 + index))), baseURL: url, apiKey: upstreamKey,
                        defaultModel: "model-\(index)")
                }
                configuration.upstreamPolicy.backoff = .milliseconds(20)
                configure(&configuration)
            }) { harness in try await body(harness, mocks) }
        } catch {
            for mock in mocks { await mock?.shutdown() }
            throw error
        }
        for mock in mocks { await mock?.shutdown() }
    }

    static func failing(_ status: Int, retryAfter: String? = nil, first: Int? = nil) -> MockBehaviour {
        var behaviour = MockBehaviour()
        behaviour.status = status
        behaviour.retryAfter = retryAfter
        behaviour.failFirst = first
        behaviour.deltaDelayMilliseconds = 1
        return behaviour
    }

    static var healthy: MockBehaviour {
        var behaviour = MockBehaviour()
        behaviour.deltaDelayMilliseconds = 1
        return behaviour
    }

    static let text = persianText(60)

    @Test("a refused first upstream: its retries, then the second answers, with X-Upstream and its own model")
    func refused() async throws {
        try await Self.with([nil, Self.healthy]) { harness, mocks in
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.status == 200)
            #expect(response.header("X-Upstream") == "b")
            #expect(try JSON.decode(ChatCompletionRequest.self, from: mocks[1]!.lastRequestBody).model == "model-1")
            let metrics = try await harness.client.send(HTTPClientRequest(url: harness.base + "/metrics"))
            let text = String(decoding: metrics.body, as: UTF8.self)
            #expect(text.contains(#"textgateway_upstream_attempts_total{upstream="a",result="connect"} 3"#))
            #expect(text.contains(#"textgateway_upstream_attempts_total{upstream="b",result="ok"} 1"#))
            await eventually("the access line says upstream=b after 4 attempts") {
                harness.logs.lines.contains {
                    $0.contains("request ") && $0.contains("upstream=b") && $0.contains("attempts=4")
                }
            }
        }
    }

    @Test(
        "503 and 429 without Retry-After: three calls to the first, then the second",
        arguments: [503, 429, 500, 502, 504])
    func busyThenFallback(status: Int) async throws {
        try await Self.with([Self.failing(status), Self.healthy]) { harness, mocks in
            let response = try await harness.process(task: "rewrite", text: Self.text)
            #expect(response.status == 200)
            #expect(response.header("X-Upstream") == "b")
            #expect(mocks[0]!.stats.requests == 3)
            #expect(mocks[1]!.stats.requests == 1)
        }
    }

    @Test("a 503 that passes on the retry: the same upstream answers, after its Retry-After")
    func retryAfterThenAnswer() async throws {
        try await Self.with([Self.failing(503, retryAfter: "1", first: 1), Self.healthy]) { harness, mocks in
            let started = MonotonicInstant.now()
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.status == 200)
            #expect(response.header("X-Upstream") == "a")
            #expect(mocks[0]!.stats.requests == 2)
            #expect(mocks[1]!.stats.requests == 0)
            #expect(started.nanoseconds(until: .now()) >= 1_000_000_000, "answered before the upstream's Retry-After")
        }
    }

    @Test("the only upstream busy with a long Retry-After: 503 upstream_busy at once, its Retry-After passed on")
    func longRetryAfter() async throws {
        try await Self.with([Self.failing(503, retryAfter: "120")]) { harness, mocks in
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.status == 503)
            #expect(try Body(response).code == "upstream_busy")
            #expect(response.header("Retry-After") == "120")
            #expect(response.header("X-Upstream") == "a")
            #expect(mocks[0]!.stats.requests == 1)
        }
    }

    @Test("a slow first byte: the attempt's time is up, and the second upstream answers")
    func slowFirstByte() async throws {
        var slow = Self.healthy
        slow.latencyMilliseconds = 5000
        try await Self.with(
            [slow, Self.healthy],
            configure: {
                $0.upstreamPolicy.tryTimeout = .milliseconds(300)
                $0.upstreamPolicy.retries = 0
            }
        ) { harness, mocks in
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.status == 200)
            #expect(response.header("X-Upstream") == "b")
            let streamed = try await harness.process(#"{"task":"summarize","text":"\#(Self.text)","stream":true}"#)
            #expect(streamed.status == 200)
            #expect(streamed.header("X-Upstream") == "b")
            #expect(String(decoding: streamed.body, as: UTF8.self).contains("event: done"))
        }
    }

    @Test("a connection dropped after the head and half the body, before the client had a byte: tried again")
    func resetAfterHead() async throws {
        var cut = Self.healthy
        cut.cutBody = true
        try await Self.with([cut, Self.healthy]) { harness, mocks in
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.status == 200)
            #expect(response.header("X-Upstream") == "b")
            #expect(mocks[0]!.stats.requests == 3)
        }
    }

    @Test("a stream cut midway is not tried again: the client already has its first deltas")
    func streamCutMidway() async throws {
        var cut = Self.healthy
        cut.cutStream = .abort
        try await Self.with([cut, Self.healthy]) { harness, mocks in
            let response = try await harness.process(#"{"task":"summarize","text":"\#(Self.text)","stream":true}"#)
            #expect(response.status == 200)
            #expect(response.header("X-Upstream") == "a")
            let text = String(decoding: response.body, as: UTF8.self)
            #expect(text.contains("event: delta"))
            #expect(text.contains("event: error") && text.contains("upstream_error"))
            #expect(!text.contains("event: done"))
            #expect(mocks[0]!.stats.requests == 1)
            #expect(mocks[1]!.stats.requests == 0)
        }
    }

    @Test("/v1, streamed and not, falls back the same way and says who answered")
    func openAIFallback() async throws {
        try await Self.with([Self.failing(503), Self.healthy]) { harness, mocks in
            for stream in [false, true] {
                let body = #"{"model":"default","messages":[{"role":"user","content":"سلام"}],"stream":\#(stream)}"#
                let response = try await harness.client.send(
                    HTTPClientRequest(
                        method: "POST", url: harness.base + "/v1/chat/completions",
                        headers: [("Content-Type", "application/json")], body: Array(body.utf8)
                    ))
                #expect(response.status == 200)
                #expect(response.header("X-Upstream") == "b")
                #expect(try JSON.decode(ChatCompletionRequest.self, from: mocks[1]!.lastRequestBody).model == "model-1")
            }
        }
    }

    @Test("both upstreams down: the contract's status, within the timeout")
    func bothDown() async throws {
        try await Self.with([nil, nil], configure: { $0.upstreamTimeout = .seconds(3) }) { harness, _ in
            let response = try await harness.process(task: "summarize", text: Self.text)
            #expect(response.status == 502)
            #expect(try Body(response).code == "upstream_error")
            #expect(response.header("X-Upstream") == "b")
            let streamed = try await harness.process(#"{"task":"summarize","text":"\#(Self.text)","stream":true}"#)
            // No upstream's answer began: the same JSON error, not a stream.
            #expect(streamed.status == 502)
            #expect(try Body(streamed).code == "upstream_error")
        }
    }

    @Test("a failing upstream rests for its cooldown, then one probe finds it back and it answers again")
    func cooldownAndRecovery() async throws {
        let port = try LoopbackPort.free()
        let backup = try await MockUpstream.started(defaults: Self.healthy, apiKey: upstreamKey)
        defer { Task { await backup.shutdown() } }
        try await GatewayHarness.with(configure: { configuration in
            configuration.upstreams = [
                UpstreamSettings(
                    name: "a", baseURL: "http://127.0.0.1:\(port)/v1", apiKey: upstreamKey, defaultModel: "m"),
                UpstreamSettings(name: "b", baseURL: backup.baseURL, apiKey: upstreamKey, defaultModel: "m"),
            ]
            configuration.upstreamPolicy.retries = 0
            configuration.upstreamPolicy.breakerFailures = 2
            configuration.upstreamPolicy.cooldown = .seconds(2)
        }) { harness in
            #expect(try await harness.process(task: "summarize", text: Self.text).header("X-Upstream") == "b")
            // The circuit opens during the second request: not before it starts.
            let openedNoSoonerThan = MonotonicInstant.now()
            #expect(try await harness.process(task: "summarize", text: Self.text).header("X-Upstream") == "b")
            await eventually("the circuit of upstream a opens") {
                harness.logs.lines.contains { $0.contains("upstream_circuit_open") && $0.contains("upstream=a") }
            }
            // Resting: a restarted first upstream is not asked until the cooldown is over.
            let primary = try await MockUpstream.started(port: port, defaults: Self.healthy, apiKey: upstreamKey)
            let asked = MonotonicInstant.now()
            let resting = try await harness.process(task: "summarize", text: Self.text)
            // Only a request that started inside the cooldown must be turned away from it (a
            // loaded machine may get here later).
            if openedNoSoonerThan.nanoseconds(until: asked) < 2_000_000_000 {
                #expect(resting.header("X-Upstream") == "b")
                #expect(primary.stats.requests == 0)
            }
            await eventually("upstream a answers again") {
                (try? await harness.process(task: "summarize", text: Self.text))?.header("X-Upstream") == "a"
            }
            #expect(harness.logs.lines.contains { $0.contains("upstream_circuit_closed") && $0.contains("upstream=a") })
            await primary.shutdown()
        }
    }
}
