import ChatAPI
import EventLoop
import HTTPClient
import Synchronization
import TestSupport
import Testing

@testable import Access
@testable import Gateway

/// How requests end, through the one finished hook: hang-ups, resets, single flight, the
/// limits they leave behind, and the log and metrics they leave.
@Suite("Request pipeline end to end", .serialized)
struct PipelineEndToEndTests {
    static let sample = ProcessEndToEndTests.sample

    static func guests(_ plan: String) -> (inout GatewayConfiguration) -> Void {
        { configuration in
            configuration.rateLimitsEnabled = true
            configuration.plans = (try? PlanCatalog.parse(plan)) ?? PlanCatalog()
        }
    }

    static func processBody(_ text: String, stream: Bool = false) -> String {
        "{\"task\":\"summarize\",\"text\":\(jsonString(text))\(stream ? ",\"stream\":true" : "")}"
    }

    static func rawRequest(_ body: String, port: Int, extraHeaders: String = "") -> String {
        "POST /api/process HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + "\(extraHeaders)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    static func port(_ harness: GatewayHarness) -> Int { harness.running.address?.port ?? 0 }

    static func metric(_ harness: GatewayHarness, _ series: String) async throws -> Double? {
        let text = String(
            decoding: try await harness.client.send(HTTPClientRequest(url: harness.base + "/metrics")).body,
            as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix(series + " ") {
            return Double(line.dropFirst(series.count + 1))
        }
        return nil
    }

    @Test("a client gone before its answer is 499 cancelled in the log and in /metrics, never 502 or an upstream error")
    func hangUpIs499() async throws {
        try await GatewayHarness.with { harness in
            let port = Self.port(harness)
            // The mock holds each call a minute: only the hang-up can end it while the test waits,
            // however late a loaded machine notices it.
            for index in 0..<8 {
                try await onThread {
                    let client = try TestClient(port: port)
                    try client.send(
                        Self.rawRequest(Self.processBody(Self.sample + " [mock:latency-ms=60000]"), port: port))
                    return client
                }.closeWhen { harness.mock.stats.requests == index + 1 }
                await eventually("no upstream call is in flight") { harness.mock.stats.inFlight == 0 }
            }
            await eventually(
                "8 lines say status=499 outcome=cancelled: \(harness.logs.lines.filter { $0.contains(" request ") })"
            ) {
                harness.logs.lines.filter { $0.contains("status=499") && $0.contains("outcome=cancelled") }.count
                    == 8
            }
            #expect(
                !harness.logs.lines.contains {
                    $0.contains("status=502") || $0.contains("code=upstream_error") || $0.contains("upstream_failure")
                })
            #expect(
                try await Self.metric(harness, #"textgateway_requests_total{route="/api/process",status="499"}"#) == 8)
            #expect(
                try await Self.metric(harness, #"textgateway_requests_total{route="/api/process",status="502"}"#) == nil
            )
            #expect(try await Self.metric(harness, #"textgateway_upstream_errors_total{kind="cancelled"}"#) == nil)
            await eventually("no upstream call is in flight") { harness.mock.stats.inFlight == 0 }
        }
    }

    @Test(
        "hang-ups (before the head, upstream, mid-stream) and resets racing a stream's head free every slot; gauge idle"
    )
    func hangUpsReleaseLeases() async throws {
        try await GatewayHarness.with(configure: Self.guests("guest:-:2:-")) { harness in
            let port = Self.port(harness)
            let gauge = harness.running.gateway.metrics.inFlight
            // Resets right after a streamed request against a fast upstream: they race the head.
            for _ in 0..<24 {
                try await onThread {
                    let client = try TestClient(port: port)
                    try client.send(Self.rawRequest(Self.processBody(Self.sample, stream: true), port: port))
                    client.abort()
                }
            }
            // Hang-ups during the upstream call.
            for _ in 0..<6 {
                let before = harness.mock.stats.requests
                try await onThread {
                    let client = try TestClient(port: port)
                    try client.send(
                        Self.rawRequest(Self.processBody(Self.sample + " [mock:latency-ms=2000]"), port: port))
                    return client
                }.closeWhen { harness.mock.stats.requests > before }
                await eventually("no upstream call is in flight") { harness.mock.stats.inFlight == 0 }
            }
            // Hang-ups in the middle of a stream.
            for _ in 0..<6 {
                try await onThread {
                    let client = try TestClient(port: port)
                    try client.send(
                        Self.rawRequest(
                            Self.processBody(Self.sample + " [mock:deltas=100,delta-delay-ms=30]", stream: true),
                            port: port))
                    _ = try client.readHead()
                    client.abort()
                }
            }
            // Hang-ups before the head was even complete.
            for _ in 0..<6 {
                try await onThread {
                    let client = try TestClient(port: port)
                    try client.send("POST /api/process HTTP/1.1\r\nHost: x\r\nContent-Le")
                    client.abort()
                }
            }
            await eventually("the in-flight gauge is back at 0") { gauge.value == 0 }
            await eventually("no upstream call is in flight") { harness.mock.stats.inFlight == 0 }
            // The plan's two concurrent requests are both free; a third is still refused.
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<2 {
                    group.addTask {
                        try await harness.process(task: "summarize", text: Self.sample + " [mock:latency-ms=400]")
                            .status
                    }
                }
                var all: [Int] = []
                for try await status in group { all.append(status) }
                return all
            }
            #expect(statuses == [200, 200])
            let before = harness.mock.stats.requests
            async let slow = harness.process(task: "summarize", text: Self.sample + " [mock:latency-ms=600]")
            async let slower = harness.process(task: "summarize", text: Self.sample + " [mock:latency-ms=600]")
            // Both admitted: their calls are upstream.
            await eventually("the upstream has both requests") { harness.mock.stats.requests == before + 2 }
            let third = try await harness.process(task: "summarize", text: Self.sample)
            #expect(third.status == 429)
            #expect(try await [slow.status, slower.status] == [200, 200])
            await eventually("the in-flight gauge is back at 0") { gauge.value == 0 }
        }
    }

    @Test("single flight: when the request that started the shared call hangs up, the others still get the answer")
    func singleFlightLeaderHangsUp() async throws {
        try await GatewayHarness.with(configure: { $0.cacheTimeToLive = .seconds(60) }) { harness in
            let port = Self.port(harness)
            // Long enough that the followers join the call however loaded the machine is (800 ms
            // was not, with every core busy).
            let text = Self.sample + " [mock:latency-ms=15000]"
            let leader = try await onThread {
                let client = try TestClient(port: port)
                try client.send(Self.rawRequest(Self.processBody(text), port: port))
                return client
            }
            await eventually("the upstream has the call") { harness.mock.stats.inFlight == 1 }
            let followers = Task {
                try await withThrowingTaskGroup(of: Int.self) { group in
                    for _ in 0..<3 { group.addTask { try await harness.process(task: "summarize", text: text).status } }
                    var all: [Int] = []
                    for try await status in group { all.append(status) }
                    return all
                }
            }
            // Every request has joined the flight once all four are in flight.
            await eventually("4 requests are in flight") { harness.running.gateway.metrics.inFlight.value == 4 }
            leader.abort()
            #expect(try await followers.value == [200, 200, 200])
            #expect(harness.mock.stats.requests == 1)
            #expect(harness.mock.stats.cancelled == 0)
            await eventually("a line says status=499 outcome=cancelled") {
                harness.logs.lines.contains { $0.contains("status=499") && $0.contains("outcome=cancelled") }
            }
        }
    }

    @Test("single flight: the shared call is aborted once every request waiting for it has gone")
    func singleFlightEveryoneHangsUp() async throws {
        try await GatewayHarness.with(configure: { $0.cacheTimeToLive = .seconds(60) }) { harness in
            let port = Self.port(harness)
            /// Three clients asking for `text` at once, all of them waiting on one upstream call.
            func threeWaiting(_ text: String) async throws -> [TestClient] {
                var clients: [TestClient] = []
                for _ in 0..<3 {
                    clients.append(
                        try await onThread {
                            let client = try TestClient(port: port)
                            try client.send(Self.rawRequest(Self.processBody(text), port: port))
                            return client
                        })
                }
                await eventually("one upstream call for the 3 requests in flight") {
                    harness.mock.stats.inFlight == 1 && harness.running.gateway.metrics.inFlight.value == 3
                }
                return clients
            }
            // Two of three gone: the call goes on, and the one left gets its answer. The calls last
            // long enough for all three to join on a loaded machine.
            let stayed = try await threeWaiting(Self.sample + " [mock:latency-ms=15000]")
            stayed[0].abort()
            stayed[1].abort()
            await eventually("1 request is in flight") { harness.running.gateway.metrics.inFlight.value == 1 }
            #expect(harness.mock.stats.cancelled == 0)
            let last = stayed[2]
            #expect(try await onThread { try last.readResponse() }.status == 200)
            #expect(harness.mock.stats.cancelled == 0)
            // All three gone: the call is aborted.
            let gone = try await threeWaiting(Self.sample + " [mock:latency-ms=60000]")
            for client in gone { client.abort() }
            await eventually("the upstream's call is cancelled") { harness.mock.stats.cancelled == 1 }
            #expect(harness.mock.stats.requests == 2)
        }
    }

    @Test("routing comes before admission: a 404 or 405 spends nothing of the caller's limits")
    func routingBeforeAdmission() async throws {
        try await GatewayHarness.with(configure: Self.guests("guest:1:-:-")) { harness async throws in
            for _ in 0..<3 {
                #expect(
                    try await harness.client.send(
                        HTTPClientRequest(method: "POST", url: harness.base + "/api/nope", body: Array("{}".utf8))
                    ).status == 404)
                #expect(
                    try await harness.client.send(HTTPClientRequest(url: harness.base + "/api/process")).status == 405)
                #expect(try await harness.client.send(HTTPClientRequest(url: harness.base + "/v1/nope")).status == 404)
            }
            #expect(try await harness.process(task: "summarize", text: Self.sample).status == 200)
            #expect(try await harness.process(task: "summarize", text: Self.sample).status == 429)
        }
    }

    @Test("RateLimit-Remaining of the daily token quota counts the answer it comes with")
    func remainingCountsThisAnswer() async throws {
        try await GatewayHarness.with(configure: Self.guests("guest:-:-:100000")) { harness in
            var used = 0
            for index in 0..<3 {
                let response = try await harness.process(
                    task: "summarize", text: Self.sample + String(repeating: " متن", count: index))
                #expect(response.status == 200)
                let usage = try #require(try Body(response).usage)
                used += usage.inputTokens + usage.outputTokens
                #expect(response.header("RateLimit-Limit") == "100000")
                #expect(response.header("RateLimit-Remaining") == String(100_000 - used))
            }
        }
    }

    @Test("repeated header lines: every X-Forwarded-For line counts; two Authorization lines are 400")
    func repeatedFields() async throws {
        try await GatewayHarness.with(configure: { configuration in
            Self.guests("guest:2:-:-")(&configuration)
            configuration.trustedProxies = (try? TrustedProxies.parse("127.0.0.1/32")) ?? configuration.trustedProxies
        }) { harness in
            var statuses: [Int] = []
            for index in 0..<4 {
                // The client rotates the first line; the proxy appends its own.
                let response = try await harness.process(
                    task: "summarize", text: Self.sample,
                    headers: [
                        ("X-Forwarded-For", "198.51.100.\(index)"), ("X-Forwarded-For", "203.0.113.9"),
                    ])
                statuses.append(response.status)
            }
            #expect(statuses == [200, 200, 429, 429])
            let twice = try await harness.process(
                task: "summarize", text: Self.sample,
                headers: [("Authorization", "Bearer a"), ("Authorization", "Bearer b")])
            #expect(twice.status == 400)
            #expect(try Body(twice).code == "bad_request")
            let types = try await harness.process(
                #"{"task":"summarize","text":"\#(Self.sample)"}"#,
                headers: [("Content-Type", "application/json"), ("Content-Type", "text/plain")])
            #expect(types.status == 400)
        }
    }

    /// Counts the finished hook's calls per request id.
    final class CountingObserver: RequestObserver {
        let seen = Mutex<[String: Int]>([:])
        func requestFinished(_ request: FinishedRequest) async {
            seen.withLock { $0[request.requestID, default: 0] += 1 }
        }
        var total: Int { seen.withLock { $0.values.reduce(0, +) } }
        var all: [String: Int] { seen.withLock { $0 } }
    }

    @Test("the finished hook runs exactly once per request on every path")
    func finishedOncePerRequest() async throws {
        let observer = CountingObserver()
        try await GatewayHarness.with(
            configure: { configuration in
                Self.guests("guest:-:1:-")(&configuration)
                configuration.cacheTimeToLive = .seconds(60)
            }, observers: [observer]
        ) { harness in
            let port = Self.port(harness)
            var sent = 0
            func id(_ n: Int) -> [(name: String, value: String)] { [("X-Request-Id", "req-\(n)")] }
            // Answered, answered from the cache, refused by validation, not found, method not allowed.
            sent += 1
            _ = try await harness.process(task: "summarize", text: Self.sample, headers: id(sent))
            sent += 1
            _ = try await harness.process(task: "summarize", text: Self.sample, headers: id(sent))
            sent += 1
            _ = try await harness.process(task: "nope", text: Self.sample, headers: id(sent))
            sent += 1
            _ = try await harness.client.send(HTTPClientRequest(url: harness.base + "/nope", headers: id(sent)))
            sent += 1
            _ = try await harness.client.send(HTTPClientRequest(url: harness.base + "/api/process", headers: id(sent)))
            // Streamed to the end.
            sent += 1
            _ = try await harness.client.send(
                HTTPClientRequest(
                    method: "POST", url: harness.base + "/api/process",
                    headers: [("Content-Type", "application/json")] + id(sent),
                    body: Array(Self.processBody(Self.sample + " x", stream: true).utf8)))
            // Refused by the concurrency limit while another runs.
            let upstreamCalls = harness.mock.stats.requests
            async let running = harness.process(
                task: "rewrite", text: Self.sample + " [mock:latency-ms=500]", headers: id(100))
            await eventually("the upstream has one more call") { harness.mock.stats.requests == upstreamCalls + 1 }
            sent += 1
            #expect(try await harness.process(task: "titles", text: Self.sample, headers: id(sent)).status == 429)
            _ = try await running
            // Gone during the upstream call, gone during a stream, reset against a stream's head.
            let goneDuringCall = try await onThread {
                let client = try TestClient(port: port)
                try client.send(
                    Self.rawRequest(
                        Self.processBody(Self.sample + " y [mock:latency-ms=2000]"), port: port,
                        extraHeaders: "X-Request-Id: req-200\r\n"))
                return client
            }
            await eventually("the upstream has the call") { harness.mock.stats.inFlight == 1 }
            goneDuringCall.abort()
            try await onThread {
                let client = try TestClient(port: port)
                try client.send(
                    Self.rawRequest(
                        Self.processBody(Self.sample + " z [mock:deltas=50,delta-delay-ms=30]", stream: true),
                        port: port, extraHeaders: "X-Request-Id: req-201\r\n"))
                _ = try client.readHead()
                client.abort()
                let reset = try TestClient(port: port)
                try reset.send(
                    Self.rawRequest(
                        Self.processBody(Self.sample + " w", stream: true), port: port,
                        extraHeaders: "X-Request-Id: req-202\r\n"))
                reset.abort()
                // A malformed request the server refuses itself.
                let malformed = try TestClient(port: port)
                try malformed.send("GET / HTTP/1.1\r\nHost: x\r\nBad Header\r\n\r\n")
                _ = try? malformed.readResponse()
            }
            // req-202's reset may beat its request to the server; then it never began.
            let required = Array(1...sent) + [100, 200, 201]
            await eventually("each request that must have reached the server has ended, and the refused one too") {
                required.allSatisfy { observer.all["req-\($0)"] != nil } && observer.total >= required.count + 1
            }
            // A second call for a request would come after its first, and nothing marks that
            // none came: the counts are read again after a pause.
            try await Task.sleep(for: .milliseconds(200))
            #expect(observer.all.values.allSatisfy { $0 == 1 }, "\(observer.all)")
            let reached = observer.all["req-202"] == nil ? 0 : 1
            #expect(observer.total == required.count + reached + 1)
            // The request the server refused itself has its line too, saying what was wrong.
            #expect(
                harness.logs.lines.contains {
                    $0.contains("status=400") && $0.contains("outcome=rejected") && $0.contains(" error=")
                })
        }
    }
}

extension TestClient {
    /// Closes the connection (a reset) once `condition` holds, e.g. the upstream has the call.
    func closeWhen(_ condition: @escaping () -> Bool) async {
        await eventually("the moment to close the connection", onTimeout: .returnsFalse) { condition() }
        abort()
    }
}
