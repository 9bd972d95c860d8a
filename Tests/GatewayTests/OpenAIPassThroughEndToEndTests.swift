import ChatAPI
import Gateway
import HTTPClient
import JSON
import MockUpstream
import TestSupport
import Testing

/// `/v1/chat/completions` with what the official SDKs send beyond plain chat — tools, `n`,
/// seeds, log-probabilities, response formats, tool-call histories, image parts — through a
/// real gateway to the mock upstream: every field arrives upstream as the client wrote it,
/// and the answer comes back as the upstream gave it.
@Suite("OpenAI-compatible /v1 passes requests and answers through", .serialized)
struct OpenAIPassThroughEndToEndTests {
    typealias Value = JSONValue

    static let configure = OpenAIEndToEndTests.configure // aliases fast/smart, max_tokens 500

    static let tools =
        #"[{"type":"function","function":{"name":"get_weather","description":"Weather for a city","#
        + #""parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},"#
        + #"{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}]"#

    /// A history with a tool call and its result, and an image part; the directive in the
    /// user message asks the mock to answer with the body it received.
    static let history =
        #"[{"role":"user","content":[{"type":"text","#
        + #""text":"Weather where this photo was taken? [mock:echo-request=on]"},{"type":"image_url","#
        + #""image_url":{"url":"data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==","detail":"low"}}]},"#
        + #"{"role":"assistant","content":null,"tool_calls":[{"id":"call_abc123","type":"function","#
        + #""function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},{"role":"tool","#
        + #""tool_call_id":"call_abc123","content":"{\"celsius\":21.50}"}]"#

    /// Everything the gateway passes as it came, numbers spelled as a client may spell them.
    static let fields =
        #""tools":\#(tools),"tool_choice":"auto","n":1,"seed":18446744073709551615,"logprobs":true,"top_logprobs":2,"#
        + #""logit_bias":{"50256":-100,"1234567890123":1.5e1},"response_format":{"type":"json_schema","#
        + #""json_schema":{"name":"w","schema":{"type":"object"}}},"parallel_tool_calls":false,"temperature":1e-7,"#
        + #""top_p":0.10,"metadata":{"x":[1,{"y":null}]},"x_vendor":true"#

    func post(_ harness: GatewayHarness, _ body: String) async throws -> HTTPClientResponse {
        try await harness.client.send(
            HTTPClientRequest(
                method: "POST", url: harness.base + "/v1/chat/completions",
                headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
    }

    /// The `data` of every event of a streamed answer, and whether it ended with `[DONE]`.
    func stream(_ harness: GatewayHarness, _ body: String) async throws -> (chunks: [Value], done: Bool) {
        let response = try await harness.client.stream(
            HTTPClientRequest(
                method: "POST", url: harness.base + "/v1/chat/completions",
                headers: [("Content-Type", "application/json")], body: Array(body.utf8)))
        #expect(response.status == 200)
        var reader = ServerSentEventReader()
        var events: [ServerSentEvent] = []
        for try await chunk in response.body { events += try reader.feed(chunk) }
        let done = events.last?.data == "[DONE]"
        let chunks = try events.filter { $0.data != "[DONE]" }.map { try Value.parse(Array($0.data.utf8)) }
        return (chunks, done)
    }

    @Test("passes every field and the whole history upstream as sent: only the alias and max_tokens change")
    func fieldsArriveUnchanged() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let body = #"{"model":"smart","messages":\#(Self.history),\#(Self.fields),"max_tokens":99999}"#
            let response = try await post(harness, body)
            #expect(response.status == 200)
            let expected = #"{"model":"upstream-smart","messages":\#(Self.history),\#(Self.fields),"max_tokens":500}"#
            #expect(String(decoding: harness.mock.lastRequestBody, as: UTF8.self) == expected)
            // The mock's answer is the body it received, relayed as the upstream wrote it.
            let completion = try ChatCompletion(jsonBytes: response.body)
            #expect(completion.firstContent == expected)
            #expect(completion.usage?.totalTokens != nil)
        }
    }

    @Test("passes a streamed request upstream as sent, with include_usage merged into the client's stream_options")
    func streamedFieldsArriveUnchanged() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let body =
                #"{"model":"fast","stream":true,"stream_options":{"include_obfuscation":false},"#
                + #""messages":\#(Self.history),\#(Self.fields)}"#
            let (chunks, done) = try await stream(harness, body)
            #expect(done)
            let expected =
                #"{"model":"upstream-fast","stream":true,"stream_options":{"include_obfuscation":false,"#
                + #""include_usage":true},"messages":\#(Self.history),\#(Self.fields),"max_tokens":500}"#
            #expect(String(decoding: harness.mock.lastRequestBody, as: UTF8.self) == expected)
            let text = chunks.compactMap { $0["choices"]?.firstElement?["delta"]?["content"]?.stringValue }.joined()
            #expect(text == expected)
            // The client did not ask for usage: the usage-only chunk stays with the gateway.
            #expect(!chunks.contains { $0["usage"].map { !$0.isNull } ?? false })
            await eventually("the /v1 access line says outcome=done with output_tokens") {
                harness.logs.lines.contains {
                    $0.contains("/v1/chat/completions") && $0.contains("outcome=done")
                        && $0.contains("output_tokens=")
                }
            }
        }
    }

    @Test(
        "keeps max_completion_tokens, capped, instead of adding max_tokens",
        arguments: [
            (#","max_completion_tokens":99999"#, #","max_completion_tokens":500"#),
            (#","max_completion_tokens":20"#, #","max_completion_tokens":20"#),
        ]
    )
    func maxCompletionTokens(sent: String, upstream: String) async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let messages = #""messages":[{"role":"user","content":"hi"}]"#
            let response = try await post(harness, #"{"model":"fast",\#(messages)\#(sent)}"#)
            #expect(response.status == 200)
            #expect(
                String(decoding: harness.mock.lastRequestBody, as: UTF8.self)
                    == #"{"model":"upstream-fast",\#(messages)\#(upstream)}"#)
        }
    }

    @Test("answers a tool call with tool_calls, content null and finish_reason tool_calls, and counts its usage")
    func toolCall() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let body =
                #"{"model":"fast","messages":[{"role":"user","content":"Weather in Paris?"}],"tools":\#(Self.tools),"#
                + #""tool_choice":"auto"}"#
            let response = try await post(harness, body)
            #expect(response.status == 200)
            let answer = try Value.parse(response.body)
            let choice = try #require(answer["choices"]?.firstElement)
            #expect(choice["finish_reason"] == .string("tool_calls"))
            #expect(choice["message"]?["content"] == .null)
            let call = try #require(choice["message"]?["tool_calls"]?.firstElement)
            #expect(call["type"] == .string("function"))
            #expect(call["id"]?.stringValue?.isEmpty == false)
            #expect(call["function"]?["name"] == .string("get_weather"))
            #expect(call["function"]?["arguments"] == .string("{}"))
            #expect(try ChatCompletion(jsonBytes: response.body).usage?.completionTokens != nil)
            await eventually("the /v1 access line says status=200 with output_tokens") {
                harness.logs.lines.contains {
                    $0.contains("/v1/chat/completions") && $0.contains("status=200")
                        && $0.contains("output_tokens=")
                }
            }
        }
    }

    @Test("streams a tool call in OpenAI's delta shape")
    func streamedToolCall() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let body =
                #"{"model":"fast","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","#
                + #""content":"Time?"}],"tools":\#(Self.tools),"tool_choice":{"type":"function","#
                + #""function":{"name":"get_time"}}}"#
            let (chunks, done) = try await stream(harness, body)
            #expect(done)
            let calls = chunks.compactMap { $0["choices"]?.firstElement?["delta"]?["tool_calls"]?.firstElement }
            #expect(calls.first?["function"]?["name"] == .string("get_time"))
            #expect(calls.first?["id"]?.stringValue?.isEmpty == false)
            #expect(calls.compactMap { $0["function"]?["arguments"]?.stringValue }.joined() == "{}")
            #expect(chunks.contains { $0["choices"]?.firstElement?["finish_reason"] == .string("tool_calls") })
            #expect(chunks.contains { $0["usage"]?["total_tokens"]?.intValue != nil })
        }
    }

    @Test("counts a tool call's chunks as the answer arriving: a slow tool call is not a first-token timeout")
    func slowStreamedToolCall() async throws {
        try await GatewayHarness.with(configure: {
            Self.configure(&$0)
            $0.streamFirstTokenTimeout = .milliseconds(300)
        }) { harness in
            // The call's id and name at once, its arguments after 1 s, then the end.
            let body =
                #"{"model":"fast","stream":true,"messages":[{"role":"user","#
                + #""content":"Slow [mock:delta-delay-ms=1000]"}],"tools":\#(Self.tools)}"#
            let (chunks, done) = try await stream(harness, body)
            #expect(done)
            #expect(chunks.contains { $0["choices"]?.firstElement?["finish_reason"] == .string("tool_calls") })
            #expect(!chunks.contains { $0["error"] != nil })
        }
    }

    @Test("answers n=2 with two choices, streamed and not", arguments: [false, true])
    func twoChoices(streamed: Bool) async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let body =
                #"{"model":"fast","n":2,"stream":\#(streamed),"messages":[{"role":"user","#
                + #""content":"Two please [mock:deltas=3]"}]}"#
            if streamed {
                let (chunks, done) = try await stream(harness, body)
                #expect(done)
                var texts: [Int: String] = [:]
                for chunk in chunks {
                    guard let choice = chunk["choices"]?.firstElement, let index = choice["index"]?.intValue else {
                        continue
                    }
                    texts[index, default: ""] += choice["delta"]?["content"]?.stringValue ?? ""
                }
                #expect(texts.keys.sorted() == [0, 1])
                #expect(texts[0] == MockBehaviour().content && texts[1] == MockBehaviour().content)
            } else {
                let response = try await post(harness, body)
                #expect(response.status == 200)
                let completion = try ChatCompletion(jsonBytes: response.body)
                #expect(completion.choices.map(\.index) == [0, 1])
                #expect(completion.choices.allSatisfy { $0.message?.content == MockBehaviour().content })
                #expect(completion.usage?.totalTokens != nil)
            }
        }
    }

    @Test("passes an image part upstream instead of refusing it")
    func imagePart() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let messages =
                #"[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}},"#
                + #"{"type":"text","text":"What is it?"}]}]"#
            let response = try await post(harness, #"{"model":"fast","messages":\#(messages)}"#)
            #expect(response.status == 200)
            #expect(
                String(decoding: harness.mock.lastRequestBody, as: UTF8.self)
                    == #"{"model":"upstream-fast","messages":\#(messages),"max_tokens":500}"#)
        }
    }

    @Test("still refuses an unknown alias and a body it cannot read, whatever else it carries")
    func refusals() async throws {
        try await GatewayHarness.with(configure: Self.configure) { harness in
            let unknown = try await post(
                harness, #"{"model":"gpt-4o","messages":[{"role":"user","content":"x"}],"tools":\#(Self.tools),"n":2}"#)
            #expect(unknown.status == 404)
            #expect(try Value.parse(unknown.body)["error"]?["code"] == .string("model_not_found"))
            for body in [
                #"{"model":"fast","messages":[{"content":"no role"}]}"#,
                #"{"model":"fast","messages":["hi"]}"#,
                #"{"model":"fast","messages":[{"role":"user","content":"x"}],"max_tokens":-1}"#,
                #"{"model":"fast","messages":[{"role":"user","content":"x"}],"stream_options":"on"}"#,
            ] {
                let response = try await post(harness, body)
                #expect(response.status == 400)
                #expect(try Value.parse(response.body)["error"]?["code"] == .string("invalid_json"))
            }
            #expect(harness.mock.stats.requests == 0)
        }
    }
}

extension JSONValue {
    /// The first element of an array.
    var firstElement: JSONValue? {
        if case .array(let elements) = self { return elements.first }
        return nil
    }
}
