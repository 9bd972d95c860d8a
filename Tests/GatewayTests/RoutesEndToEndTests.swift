import Gateway
import HTTPClient
import JSON
import Testing

@testable import Access
@testable import Telemetry

@Suite("Routes, health and logs end to end", .serialized)
struct RoutesEndToEndTests {
    @Test("answers GET and HEAD /api/health with status and an ISO 8601 UTC timestamp")
    func health() async throws {
        try await GatewayHarness.with { harness in
            let response = try await harness.client.send(HTTPClientRequest(url: harness.base + "/api/health"))
            #expect(response.status == 200)
            #expect(response.header("X-Request-Id") != nil)
            struct Health: Decodable {
                let status: String
                let timestamp: String
                let version: String
            }
            let health = try JSON.decode(Health.self, from: response.body)
            #expect(health.status == "ok")
            #expect(health.timestamp.count == 24 && health.timestamp.hasSuffix("Z") && health.timestamp.contains("T"))
            let head = try await harness.client.send(
                HTTPClientRequest(method: "HEAD", url: harness.base + "/api/health"))
            #expect(head.status == 200 && head.body.isEmpty)
        }
    }

    @Test("answers unknown paths with 404 and wrong methods with 405 and Allow, as JSON")
    func notFoundAndMethod() async throws {
        try await GatewayHarness.with { harness in
            let missing = try await harness.client.send(HTTPClientRequest(url: harness.base + "/api/nothing"))
            #expect(missing.status == 404)
            #expect(try Body(missing).code == "not_found")
            let wrong = try await harness.client.send(
                HTTPClientRequest(method: "GET", url: harness.base + "/api/process"))
            #expect(wrong.status == 405)
            #expect(wrong.header("Allow") == "POST")
            #expect(try Body(wrong).code == "method_not_allowed")
            let post = try await harness.client.send(
                HTTPClientRequest(method: "POST", url: harness.base + "/api/health", body: []))
            #expect(post.header("Allow") == "GET, HEAD")
        }
    }

    @Test(
        "logs one line per request without the key, the Authorization header, the text or the answer",
        arguments: [Logger.Format.text, .json])
    func logsKeepSecrets(format: Logger.Format) async throws {
        let secretText = "متن محرمانه کاربر با شماره ۰۹۱۲۳۴۵۶۷۸۹ که نباید در لاگ بیاید."
        try await GatewayHarness.with(
            configure: {
                $0.tokens = try! TokenStore.parse(
                    inline: "\(TokenStore.hashLine(forToken: "caller-token-xyz")):logger:default")
                $0.authRequired = false
            }, logFormat: format
        ) { harness in
            let ok = try await harness.process(
                task: "summarize", text: secretText,
                headers: [("Authorization", "Bearer caller-token-xyz"), ("X-Request-Id", "log-1")])
            #expect(ok.status == 200)
            let answer = try #require(try Body(ok).result)
            _ = try await harness.process(task: "summarize", text: secretText + " [mock:status=500]")
            let lines = harness.logs.lines
            let requestLines = lines.filter { $0.contains("log-1") }
            #expect(requestLines.count == 1)
            let line = try #require(requestLines.first)
            for field in ["200", "summarize", "test-model", "/api/process", "POST"] { #expect(line.contains(field)) }
            #expect(line.contains(format == .json ? "\"upstream_ms\":" : "upstream_ms="))
            #expect(line.contains(format == .json ? "\"input_tokens\":" : "input_tokens="))
            if format == .json {
                #expect(line.hasPrefix("{") && line.hasSuffix("}"))
                let object = try JSON.decode([String: JSONScalar].self, from: Array(line.utf8))
                #expect(!object.values.contains { if case .object = $0 { return true } else { return false } })
            }
            let all = lines.joined(separator: "\n")
            #expect(lines.contains { $0.contains("upstream_failure") && $0.contains("mock failure 500") })
            for secret in [upstreamKey, "caller-token-xyz", "Bearer", "محرمانه", answer, "Authorization"] {
                #expect(!all.contains(secret), "log leaked \(secret.prefix(12))")
            }
        }
    }
}

/// Any JSON scalar, to check that a log line parses as a flat JSON object.
enum JSONScalar: Decodable, Equatable {
    case string(String)
    case number(Double)
    case bool(Bool)
    case null
    case object([String: JSONScalar])
    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else {
            self = .object(try container.decode([String: JSONScalar].self))
        }
    }
}
