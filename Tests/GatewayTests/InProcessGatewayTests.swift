import ChatAPI
import HTTP1
import HTTPServer
import Synchronization
import Testing

@testable import Gateway
@testable import Telemetry
@testable import Upstream

/// The gateway driven in-process through its `ChatUpstream` seam: no sockets, no libcurl.
@Suite("Gateway in-process with a fake upstream")
struct InProcessGatewayTests {
    /// Answers every completion with a fixed text, or fails as told.
    final class FakeUpstream: ChatUpstream {
        let failure: ChatError?
        let calls = Mutex(0)
        init(failure: ChatError? = nil) { self.failure = failure }

        func complete(body: [UInt8], requestID: String?, timeout: Duration?) async throws(ChatError) -> ChatCompletion {
            calls.withLock { $0 += 1 }
            if let failure { throw failure }
            return ChatCompletion(
                id: "fake", object: "chat.completion", created: 0, model: "m",
                choices: [
                    ChatCompletion.Choice(
                        index: 0, message: ChatCompletion.Message(role: .assistant, content: "  خلاصهٔ آزمایشی  "),
                        finishReason: "stop")
                ],
                usage: Usage(promptTokens: 7, completionTokens: 3, totalTokens: 10)
            )
        }

        func forward(body: [UInt8], requestID: String?, timeout: Duration?) async throws(ChatError) -> [UInt8] {
            throw failure ?? .noContent
        }

        func streamBytes(body: [UInt8], requestID: String, timeout: Duration, headTimeout: Duration?)
            async throws(ChatError) -> any UpstreamBytes
        {
            throw failure ?? .noContent
        }
    }

    static func gateway(_ upstream: FakeUpstream, logs: LogSink, observers: [any RequestObserver] = []) -> Gateway {
        var configuration = GatewayConfiguration()
        configuration.apiKey = "unused"
        configuration.defaultModel = "m"
        configuration.rateLimitsEnabled = false
        return Gateway(
            configuration: configuration, upstream: upstream, logger: Logger(level: .info, sink: logs),
            observers: observers)
    }

    static func request(_ body: String) -> HTTPRequest {
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: "x")
        headers.add(name: "Content-Type", value: "application/json")
        headers.add(name: "X-Request-Id", value: "in-process-1")
        let head = RequestHead(
            method: .POST, target: "/api/process", path: "/api/process", query: nil, version: .http1_1,
            headers: headers, framing: .contentLength(body.utf8.count))
        return HTTPRequest(head: head, body: Array(body.utf8))
    }

    static let body = #"{"task":"summarize","text":"این یک متن آزمایشی فارسی برای سنجش دروازه است."}"#

    @Test("answers with the fake's trimmed result and usage, and logs one line when the server reports the end")
    func answers() async throws {
        let upstream = FakeUpstream()
        let logs = LogSink.memory()
        let gateway = Self.gateway(upstream, logs: logs)
        let response = await gateway.respond(to: Self.request(Self.body))
        #expect(response.status == .ok)
        guard case .bytes(let bytes) = response.body else {
            Issue.record("expected a whole body")
            return
        }
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#""result":"خلاصهٔ آزمایشی""#))
        #expect(text.contains(#""usage":{"inputTokens":7,"outputTokens":3,"totalTokens":10}"#))
        #expect(response.headers["X-Request-Id"] == "in-process-1")
        #expect(upstream.calls.withLock { $0 } == 1)
        #expect(logs.lines.isEmpty)
        await response.finished?(.completed)
        #expect(logs.lines.count == 1)
        #expect(
            logs.lines[0].contains("status=200") && logs.lines[0].contains("outcome=done")
                && logs.lines[0].contains("input_tokens=7"))
    }

    @Test(
        "classifies the fake's failures once: 504 for a timeout, 503 with Retry-After for 429, 413 for context length")
    func failures() async throws {
        let cases: [(ChatError, Int, String)] = [
            (.timedOut, 504, "upstream_timeout"),
            (.httpStatus(429, error: nil, retryAfter: "7"), 503, "upstream_busy"),
            (
                .httpStatus(
                    400, error: UpstreamErrorBody(message: "secret detail", type: nil, code: "context_length_exceeded"),
                    retryAfter: nil), 413, "text_too_long"
            ),
            (.couldNotConnect(detail: "refused"), 502, "upstream_error"),
        ]
        for (failure, status, code) in cases {
            let logs = LogSink.memory()
            let response = await Self.gateway(FakeUpstream(failure: failure), logs: logs).respond(
                to: Self.request(Self.body))
            #expect(response.status.code == status)
            guard case .bytes(let bytes) = response.body else { continue }
            let text = String(decoding: bytes, as: UTF8.self)
            #expect(text.contains(#""code":"\#(code)""#))
            #expect(!text.contains("secret detail"))
            if status == 503 { #expect(response.headers["Retry-After"] == "7") }
            await response.finished?(.completed)
            #expect(
                logs.lines.contains {
                    $0.contains("event=") == false && $0.contains("request ") && $0.contains("status=\(status)")
                })
        }
    }

    @Test("a connection closed before the answer is written turns the outcome into 499 cancelled")
    func closedBeforeWrite() async throws {
        let logs = LogSink.memory()
        let response = await Self.gateway(FakeUpstream(), logs: logs).respond(to: Self.request(Self.body))
        await response.finished?(.connectionClosed)
        #expect(logs.lines.count == 1)
        #expect(
            logs.lines[0].contains("status=499") && logs.lines[0].contains("outcome=cancelled")
                && logs.lines[0].contains("code=client_closed_request"))
    }
}
