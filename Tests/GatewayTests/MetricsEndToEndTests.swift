import Gateway
import HTTPClient
import Testing

@Suite("GET /metrics end to end", .serialized)
struct MetricsEndToEndTests {
    static let sample = ProcessEndToEndTests.sample

    /// `name{labels} value` lines of an exposition, keyed by the name with its labels.
    static func samples(_ text: String) -> [String: Double] {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                continue
            }
            samples[String(line[..<space])] = value
        }
        return samples
    }

    @Test("counts requests, statuses, tokens, upstream errors and cache lookups as they happened")
    func counts() async throws {
        try await GatewayHarness.with(configure: { $0.cacheTimeToLive = .seconds(60) }) { harness in
            for _ in 0..<3 { _ = try await harness.process(task: "summarize", text: Self.sample) }
            _ = try await harness.process(task: "rewrite", text: Self.sample + " [mock:status=503]")
            _ = try await harness.process(task: "nope", text: Self.sample)
            _ = try await harness.client.send(HTTPClientRequest(url: harness.base + "/api/health"))
            let response = try await harness.client.send(HTTPClientRequest(url: harness.base + "/metrics"))
            #expect(response.status == 200)
            #expect(response.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
            let samples = Self.samples(String(decoding: response.body, as: UTF8.self))
            #expect(samples[#"textgateway_requests_total{route="/api/process",status="200"}"#] == 3)
            #expect(samples[#"textgateway_requests_total{route="/api/process",status="503"}"#] == 1)
            #expect(samples[#"textgateway_requests_total{route="/api/process",status="400"}"#] == 1)
            #expect(samples[#"textgateway_requests_total{route="/api/health",status="200"}"#] == 1)
            #expect(samples[#"textgateway_cache_requests_total{result="miss"}"#] == 2)
            #expect(samples[#"textgateway_cache_requests_total{result="hit"}"#] == 2)
            #expect(samples[#"textgateway_upstream_errors_total{kind="busy"}"#] == 1)
            let input =
                samples[#"textgateway_tokens_total{direction="input",model="test-model",task="summarize"}"#]
                ?? samples[#"textgateway_tokens_total{task="summarize",model="test-model",direction="input"}"#]
            #expect((input ?? 0) > 0)
            #expect(samples[#"textgateway_request_duration_seconds_count{route="/api/process"}"#] == 5)
            #expect(samples["textgateway_requests_in_flight"] == 1) // the scrape itself
            #expect((samples["textgateway_open_connections"] ?? 0) >= 1)
            #expect(samples["textgateway_loop_polled_wakeups_total"] != nil)
            #expect(samples["textgateway_loop_polling_seconds_total"] != nil)
        }
    }

    @Test("guards /metrics with METRICS_TOKEN when it is set")
    func token() async throws {
        try await GatewayHarness.with(configure: { $0.metricsToken = "scrape-secret" }) { harness in
            let anonymous = try await harness.client.send(HTTPClientRequest(url: harness.base + "/metrics"))
            #expect(anonymous.status == 401)
            #expect(anonymous.header("WWW-Authenticate") == "Bearer")
            let wrong = try await harness.client.send(
                HTTPClientRequest(url: harness.base + "/metrics", headers: [("Authorization", "Bearer nope")]))
            #expect(wrong.status == 401)
            let right = try await harness.client.send(
                HTTPClientRequest(url: harness.base + "/metrics", headers: [("Authorization", "Bearer scrape-secret")]))
            #expect(right.status == 200)
        }
    }
}
