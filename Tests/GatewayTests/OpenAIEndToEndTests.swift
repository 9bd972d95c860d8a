import ChatAPI
import Gateway
import HTTPClient
import JSON
import TestSupport
import Testing

@Suite("OpenAI-compatible /v1 end to end", .serialized)
struct OpenAIEndToEndTests {
    static func configure(_ configuration: inout GatewayConfiguration) {
        configuration.modelAliases = [("fast", "upstream-fast"), ("smart", "upstream-smart")]
        configuration.maxTokens = 500
        configuration.maxMessages = 4
    }

    func post(_ harness: GatewayHarness, _ body: String) async throws -> HTTPClientResponse {
        try await harness.client.send(
            HTTPClientRequest(
                method: "POST", url: harness.base + "/v1/chat/completions",
                headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
    }

    struct OpenAIError: Decodable {
        struct Detail: Decodable {
            let message: String
            let type: String
            let code: String?
            let param: String?
        }
        let error: Detail
    }

    @Test("lists the configured aliases, never the upstream ids")
    func models() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let response = try await harness.client.send(HTTPClientRequest(url: harness.base + "/v1/models"))
            #expect(response.status == 200)
            struct List: Decodable {
                struct Model: Decodable {
                    let id: String
                    let object: String
                }
                let object: String
                let data: [Model]
            }
            let list = try JSON.decode(List.self, from: response.body)
            #expect(list.object == "list")
            #expect(list.data.map(\.id) == ["fast", "smart"])
            #expect(!String(decoding: response.body, as: UTF8.self).contains("upstream-"))
        }
    }

    @Test("relays a chat with history, rewriting the alias and capping max_tokens")
    func chat() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let response = try await post(
                harness,
                #"""
                {"model":"smart","max_tokens":99999,"temperature":0.5,"messages":[
                 {"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
                 {"role":"assistant","content":"Hello!"},{"role":"user","content":"How are you?"}]}
                """#)
            #expect(response.status == 200)
            let completion = try ChatCompletion(jsonBytes: response.body)
            #expect(completion.firstContent?.isEmpty == false)
            #expect(completion.usage?.totalTokens != nil)
            let sent = try #require(harness.lastUpstreamRequest)
            #expect(sent.model == "upstream-smart")
            #expect(sent.maxTokens == 500)
            #expect(sent.temperature == 0.5)
            #expect(sent.messages.map(\.content) == ["Be brief.", "Hi", "Hello!", "How are you?"])
            #expect(sent.messages.map(\.role) == [.system, .user, .assistant, .user])
        }
    }

    @Test(
        "refuses bad requests in OpenAI's error shape",
        arguments: [
            (#"{"model":"gpt-4","messages":[{"role":"user","content":"x"}]}"#, 404, "model_not_found"),
            (#"{"model":"fast","n":5,"messages":[{"role":"user","content":"x"}]}"#, 400, "invalid_parameter"),
            (#"{"model":"fast","n":0,"messages":[{"role":"user","content":"x"}]}"#, 400, "invalid_json"),
            (#"{"model":"fast","messages":[]}"#, 400, "invalid_messages"),
            (
                #"{"model":"fast","messages":[{"role":"user","content":"1"},{"role":"user","content":"2"},"#
                    + #"{"role":"user","content":"3"},{"role":"user","content":"4"},{"role":"user","content":"5"}]}"#,
                400, "invalid_messages"
            ),
            (#"{"model":"fast""#, 400, "invalid_json"),
            (#"{"model":"fast","model":"gpt-4","messages":[{"role":"user","content":"x"}]}"#, 400, "invalid_json"),
            (#"{"model":"fast","messages":[{"role":"user","content":"x\ud800"}]}"#, 400, "invalid_json"),
            (#"{"model":"fast","messages":[{"role":"user","content":"x"}],"stream":"true"}"#, 400, "invalid_json"),
            (#"{"model":"fast","messages":[{"role":"user","content":"x [mock:status=503]"}]}"#, 503, "upstream_busy"),
            (#"{"model":"fast","messages":[{"role":"user","content":"x [mock:status=500]"}]}"#, 502, "upstream_error"),
            (
                #"{"model":"fast","messages":[{"role":"user","content":"x [mock:status=400,"#
                    + #"error-code=context_length_exceeded]"}]}"#,
                400, "context_length_exceeded"
            ),
        ] as [(String, Int, String)]
    )
    func errors(body: String, status: Int, code: String) async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let response = try await post(harness, body)
            #expect(response.status == status)
            let error = try JSON.decode(OpenAIError.self, from: response.body)
            #expect(error.error.code == code)
            #expect(error.error.type == (status >= 500 ? "server_error" : "invalid_request_error"))
            #expect(!error.error.message.contains("mock"))
            // OpenAI's SDKs read `param` to say which part of the request was wrong.
            if code == "model_not_found" { #expect(error.error.param == "model") }
            if code == "context_length_exceeded" { #expect(error.error.param == "messages") }
            if code == "invalid_parameter" { #expect(error.error.param == "n") }
            // Nothing the gateway refuses itself costs an upstream call.
            if status == 400 && code != "context_length_exceeded" || status == 404 {
                #expect(harness.mock.stats.requests == 0)
            }
        }
    }

    @Test("answers unknown /v1 paths with 404 in OpenAI's shape")
    func unknownPath() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let response = try await harness.client.send(HTTPClientRequest(url: harness.base + "/v1/embeddings"))
            #expect(response.status == 404)
            #expect(try JSON.decode(OpenAIError.self, from: response.body).error.code == "not_found")
        }
    }

    @Test(
        "relays a streamed chat event by event to [DONE]; the usage-only chunk only when asked for",
        arguments: [false, true]
    )
    func stream(includeUsage: Bool) async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let options = includeUsage ? #","stream_options":{"include_usage":true}"# : ""
            let body =
                #"{"model":"fast","stream":true\#(options),"messages":[{"role":"user","#
                + #""content":"stream please [mock:deltas=8]"}]}"#
            let response = try await harness.client.stream(
                HTTPClientRequest(
                    method: "POST", url: harness.base + "/v1/chat/completions",
                    headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
            #expect(response.status == 200)
            #expect(response.head.header("Content-Type") == "text/event-stream; charset=utf-8")
            var decoder = ChatStreamDecoder()
            var text = ""
            var usage: Usage?
            var emptyChoices = 0
            for try await chunk in response.body {
                for event in try decoder.feed(chunk) {
                    if case .chunk(let value) = event {
                        text += value.firstDeltaContent ?? ""
                        if let value = value.usage { usage = value }
                        if value.choices.isEmpty { emptyChoices += 1 }
                    }
                }
            }
            #expect(decoder.isDone)
            #expect(text == "این یک پاسخ آزمایشی از سرویس شبیه‌سازی‌شده است که برای آزمون دروازه ساخته شده است.")
            #expect((usage?.totalTokens != nil) == includeUsage)
            #expect(emptyChoices == (includeUsage ? 1 : 0))
            #expect(harness.lastUpstreamRequest?.model == "upstream-fast")
            #expect(harness.lastUpstreamRequest?.streamOptions?.includeUsage == true)
            // The gateway counts the usage whatever the client asked.
            await eventually("the /v1 access line says outcome=done with output_tokens") {
                harness.logs.lines.contains {
                    $0.contains("/v1/chat/completions") && $0.contains("outcome=done")
                        && $0.contains("output_tokens=")
                }
            }
        }
    }

    @Test("never relays the upstream's own error text in a stream; the log has it")
    func streamErrorText() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let body =
                #"{"model":"fast","stream":true,"messages":[{"role":"user","#
                + #""content":"x [mock:stream-error-after=2]"}]}"#
            let response = try await harness.client.stream(
                HTTPClientRequest(
                    method: "POST", url: harness.base + "/v1/chat/completions",
                    headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
            var reader = ServerSentEventReader()
            var events: [ServerSentEvent] = []
            for try await chunk in response.body { events += try reader.feed(chunk) }
            let errors = events.filter { $0.data.contains("\"error\"") }
            #expect(errors.count == 1)
            #expect(!events.contains { $0.data.contains("mock stream failure") })
            let last = try #require(events.last)
            let error = try JSON.decode(OpenAIError.self, from: Array(last.data.utf8)).error
            #expect(error.code == "upstream_error")
            #expect(error.message == "The AI service did not return a successful response.")
            await eventually("a stream_error upstream failure is logged") {
                harness.logs.lines.contains { $0.contains("upstream_failure") && $0.contains("kind=stream_error") }
            }
        }
    }

    @Test("ends a relayed stream cut short upstream with an error event")
    func truncatedStream() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let body =
                #"{"model":"fast","stream":true,"messages":[{"role":"user","content":"x [mock:cut-stream=clean]"}]}"#
            let response = try await harness.client.stream(
                HTTPClientRequest(
                    method: "POST", url: harness.base + "/v1/chat/completions",
                    headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
            var reader = ServerSentEventReader()
            var events: [ServerSentEvent] = []
            for try await chunk in response.body { events += try reader.feed(chunk) }
            let last = try #require(events.last)
            #expect(try JSON.decode(OpenAIError.self, from: Array(last.data.utf8)).error.code == "upstream_error")
        }
    }
}
