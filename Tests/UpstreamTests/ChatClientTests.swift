import ChatAPI
import EventLoop
import HTTPClient
import HTTPServer
import JSON
import MockUpstream
import TestSupport
import Testing

@testable import Upstream

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `body` with a mock upstream on an ephemeral loopback port and a client for it.
private func withMock(
    apiKey: String = "test-key",
    clientKey: String? = nil,
    timeout: Duration? = nil,
    _ body: (MockUpstream, ChatClient) async throws -> Void
) async throws {
    var defaults = MockBehaviour()
    defaults.deltaDelayMilliseconds = 1
    let mock = try await MockUpstream.started(defaults: defaults, apiKey: apiKey)
    let http = try HTTPClient()
    let client = ChatClient(
        httpClient: http, baseURL: mock.baseURL + "/", apiKey: clientKey ?? apiKey, timeout: timeout)
    do {
        try await body(mock, client)
    } catch {
        await http.shutdown()
        await mock.shutdown()
        throw error
    }
    await http.shutdown()
    await mock.shutdown()
}

private func request(_ text: String, model: String = "mock-model") -> ChatCompletionRequest {
    ChatCompletionRequest(
        model: model,
        messages: [
            ChatMessage(role: .system, content: "You are a test."),
            ChatMessage(role: .user, content: text),
        ], temperature: 0.2, maxTokens: 100)
}

private func expectChatError(_ body: () async throws(ChatError) -> Void, _ check: (ChatError) -> Bool) async {
    do {
        try await body()
        Issue.record("expected a ChatError, got success")
    } catch {
        #expect(check(error), "unexpected \(error)")
    }
}

@Suite("Chat client against mock-upstream", .serialized)
struct ChatClientTests {
    @Test("decodes a normal completion with usage and sends the request id and key")
    func completion() async throws {
        try await withMock { mock, client in
            let completion = try await client.complete(request("hello there"), requestID: "req-42")
            #expect(completion.firstContent?.isEmpty == false)
            let usage = try #require(completion.usage)
            #expect(usage.promptTokens ?? 0 > 0)
            #expect(usage.totalTokens == (usage.promptTokens ?? 0) + (usage.completionTokens ?? 0))
            let sent = try JSON.decode(ChatCompletionRequest.self, from: mock.lastRequestBody)
            #expect(sent.model == "mock-model")
            #expect(sent.maxTokens == 100)
            #expect(sent.messages.count == 2)
        }
    }

    @Test(
        "maps upstream error statuses to typed errors with code and Retry-After",
        arguments: [
            ("[mock:status=400,error-code=context_length_exceeded]", 400, "context_length_exceeded", nil),
            ("[mock:status=429,retry-after=7]", 429, "rate_limit_exceeded", "7"),
            ("[mock:status=500]", 500, "server_error", nil),
            ("[mock:status=503,retry-after=3]", 503, "overloaded", "3"),
        ] as [(String, Int, String, String?)]
    )
    func errorStatuses(directive: String, status: Int, code: String, retryAfter: String?) async throws {
        try await withMock { _, client in
            await expectChatError({ () throws(ChatError) in _ = try await client.complete(request("text " + directive))
            }) { error in
                guard case .httpStatus(let got, let body, let retry) = error else { return false }
                return got == status && body?.code == code && retry == retryAfter && body?.message != nil
            }
        }
    }

    @Test(
        "a hosted API's header fields (mock provider-headers): a completion decodes the same, fields arrive in order"
    )
    func providerHeaderFields() async throws {
        try await withMock { mock, client in
            let completion = try await client.complete(request("hello [mock:provider-headers=on]"), requestID: "req-43")
            #expect(completion.firstContent == MockBehaviour().content)
            let http = try HTTPClient()
            func post(_ text: String) async throws -> HTTPClientResponse {
                try await http.send(
                    HTTPClientRequest(
                        method: "POST", url: mock.baseURL + "/chat/completions",
                        headers: [("Authorization", "Bearer test-key"), ("Content-Type", "application/json")],
                        body: try JSON.encode(request(text))
                    ))
            }
            do {
                let with = try await post("hi [mock:provider-headers=on]")
                let names = Set(MockBehaviour.providerHeaderFields.map(\.name))
                let received = with.head.headers.filter { names.contains($0.name) }
                #expect(received.map(\.name) == MockBehaviour.providerHeaderFields.map(\.name))
                #expect(received.map(\.value) == MockBehaviour.providerHeaderFields.map(\.value))
                #expect(with.header("X-RateLimit-Remaining-Tokens") == "1999580")
                let without = try await post("hi")
                #expect(without.header("x-ratelimit-remaining-tokens") == nil)
                #expect(without.status == 200)
            } catch {
                await http.shutdown()
                throw error
            }
            await http.shutdown()
        }
    }

    @Test("reports a wrong key as 401 invalid_api_key")
    func unauthorized() async throws {
        try await withMock(clientKey: "wrong") { _, client in
            await expectChatError({ () throws(ChatError) in _ = try await client.complete(request("hello")) }) {
                error in
                guard case .httpStatus(401, let body, _) = error else { return false }
                return body?.code == "invalid_api_key"
            }
        }
    }

    @Test(
        "tells unreadable and empty answers apart",
        arguments: [
            ("[mock:body=garbage]", "unreadable"),
            ("[mock:body=empty]", "unreadable"),
            ("[mock:body=no-content]", "noContent"),
            ("[mock:body=no-choices]", "noContent"),
        ]
    )
    func badBodies(directive: String, expected: String) async throws {
        try await withMock { _, client in
            await expectChatError({ () throws(ChatError) in _ = try await client.complete(request(directive)) }) {
                error in
                switch error {
                case .unreadableBody: return expected == "unreadable"
                case .noContent: return expected == "noContent"
                default: return false
                }
            }
        }
    }

    @Test("reports a refused connection as couldNotConnect")
    func connectRefused() async throws {
        let http = try HTTPClient()
        let client = ChatClient(httpClient: http, baseURL: "http://127.0.0.1:1/v1", apiKey: "k")
        await expectChatError({ () throws(ChatError) in _ = try await client.complete(request("hello")) }) { error in
            if case .couldNotConnect = error { return true }
            return false
        }
        await http.shutdown()
    }

    @Test("ends a slow call at the total timeout")
    func timeout() async throws {
        try await withMock(timeout: .milliseconds(200)) { _, client in
            await expectChatError({ () throws(ChatError) in
                _ = try await client.complete(request("[mock:latency-ms=3000]"))
            }) { error in
                if case .timedOut = error { return true }
                return false
            }
        }
    }

    @Test("aborts the upstream call when the task is cancelled; the mock sees it long before its answer was due")
    func cancellation() async throws {
        try await withMock { mock, client in
            let task = Task { () throws(ChatError) -> ChatCompletion in
                try await client.complete(request("[mock:latency-ms=10000]"))
            }
            await eventually("the upstream has the call") { mock.stats.inFlight == 1 }
            task.cancel()
            do {
                _ = try await task.value
                Issue.record("expected cancelled, got a completion")
            } catch {
                guard case .cancelled? = error as? ChatError else {
                    Issue.record("expected cancelled, got \(error)")
                    return
                }
            }
            // Half the upstream's 10 s: a transfer that was not aborted would still be open,
            // and the margin holds while the other suites keep both cores busy.
            await eventually("the upstream's call is cancelled and its connection closed") {
                mock.stats.cancelled == 1 && mock.stats.openConnections == 0
            }
        }
    }

    @Test("decodes a streamed completion chunk by chunk with usage")
    func streaming() async throws {
        try await withMock { _, client in
            var stream = ChatCompletionStream(
                bytes: try await client.streamBytes(
                    body: request("[mock:deltas=40]").streamingBody(), requestID: "t", timeout: .seconds(30),
                    headTimeout: nil))
            var text = ""
            var pieces = 0
            var usage: Usage?
            while let chunk = try await stream.next() {
                if let delta = chunk.firstDeltaContent, !delta.isEmpty {
                    text += delta
                    pieces += 1
                }
                if let value = chunk.usage { usage = value }
            }
            #expect(text == MockBehaviour().content)
            #expect(pieces > 10)
            #expect(usage?.totalTokens != nil)
        }
    }

    @Test(
        "fails a stream that is cut short or carries an error event",
        arguments: ["[mock:cut-stream=clean]", "[mock:cut-stream=abort]", "[mock:stream-error-after=2]"]
    )
    func brokenStreams(directive: String) async throws {
        try await withMock { _, client in
            var stream = ChatCompletionStream(
                bytes: try await client.streamBytes(
                    body: request(directive).streamingBody(), requestID: "t", timeout: .seconds(30), headTimeout: nil))
            do throws(ChatError) {
                while try await stream.next() != nil {}
                Issue.record("stream ended without an error")
            } catch {
                switch error {
                case .transport: #expect(!directive.contains("stream-error"))
                case .streamError(let body): #expect(directive.contains("stream-error") && body.code == "server_error")
                default: Issue.record("unexpected \(error)")
                }
            }
        }
    }

    @Test("runs 1,000 calls concurrently against a 1 s upstream and reuses connections")
    func concurrencyAndReuse() async throws {
        Socket.raiseOpenFileLimit()
        try await HeavyLoad.exclusive {
            try await withMock { mock, client in
                let start = MonotonicInstant.now()
                let failures = await withTaskGroup(of: String?.self) { group in
                    for _ in 0..<1000 {
                        group.addTask {
                            do {
                                _ = try await client.complete(request("[mock:latency-ms=1000]"))
                                return nil
                            } catch {
                                return "\(error)"
                            }
                        }
                    }
                    var failures: [String] = []
                    for await failure in group { if let failure { failures.append(failure) } }
                    return failures
                }
                #expect(failures.isEmpty, "\(failures.count) failed: \(Set(failures))")
                #expect(Double(start.nanoseconds(until: .now())) / 1e9 < 10) // serial would be 1,000 s

                let before = mock.stats.connections
                for _ in 0..<100 { _ = try await client.complete(request("again")) }
                #expect(mock.stats.connections == before) // the pool served all 100 on kept-alive connections
            }
        }
    }
}
