import ChatAPI
import HTTPClient
import JSON
import MockUpstream
import TestSupport
import Testing

@testable import Gateway
@testable import TextTasks

extension GatewayHarness {
    /// POSTs `{"task","text","format":"json"}` (plus `stream`) to /api/process.
    func processJSON(task: String = "summarize", text: String, stream: Bool = false) async throws -> HTTPClientResponse
    {
        try await process(
            "{\"task\":\(jsonString(task)),\"text\":\(jsonString(text)),\"format\":\"json\""
                + (stream ? ",\"stream\":true}" : "}"))
    }

    /// A streamed `"format": "json"` answer, read whole.
    func streamJSON(task: String = "summarize", text: String) async throws -> StreamedAnswer {
        let body = "{\"task\":\(jsonString(task)),\"text\":\(jsonString(text)),\"format\":\"json\",\"stream\":true}"
        let response = try await client.stream(
            HTTPClientRequest(
                method: "POST", url: base + "/api/process", headers: [("Content-Type", "application/json")],
                body: Array(body.utf8)))
        var answer = StreamedAnswer(status: response.status, contentType: response.head.header("Content-Type"))
        var reader = ServerSentEventReader()
        for try await chunk in response.body { answer.events += try reader.feed(chunk) }
        answer.events += reader.finish()
        return answer
    }
}

@Suite("format json on /api/process end to end", .serialized)
struct StructuredEndToEndTests {
    static let sample = ProcessEndToEndTests.sample
    static let content = MockBehaviour().content

    static func json(_ response: HTTPClientResponse) throws -> JSONValue {
        try JSONValue.parse(response.body)
    }

    static func string(_ value: JSONValue?) -> String {
        String(decoding: value?.jsonBytes() ?? [], as: UTF8.self)
    }

    @Test(
        "answers each task with data of its schema and the readable text as result, asking with a json_schema",
        arguments: [
            ("summarize", #"{"summary":"\#(content)"}"#, content),
            ("rewrite", #"{"text":"\#(content)"}"#, content),
            ("key-points", #"{"points":["\#(content) 1"]}"#, "- \(content) 1"),
            (
                "titles", "{\"titles\":[" + (1...10).map { "\"\(content) \($0)\"" }.joined(separator: ",") + "]}",
                (1...10).map { "\($0). \(content) \($0)" }.joined(separator: "\n")
            ),
        ]
    )
    func eachTask(task: String, data: String, result: String) async throws {
        try await GatewayHarness.with { harness in
            let response = try await harness.processJSON(task: task, text: Self.sample)
            #expect(response.status == 200)
            let body = try Self.json(response)
            #expect(body["success"] == .bool(true))
            #expect(Self.string(body["data"]) == data)
            #expect(body["result"]?.stringValue == result)
            #expect(body["requestId"]?.stringValue == response.header("X-Request-Id"))
            #expect(body["usage"]?["totalTokens"]?.intValue != nil)
            #expect(harness.mock.stats.requests == 1)
            let sent = try #require(harness.lastUpstreamRequest)
            let schema = TaskSchema.of(try #require(TextTask(rawValue: task)))
            #expect(sent.responseFormat == schema.responseFormat(.jsonSchema))
            #expect(sent.responseFormat?["json_schema"]?["strict"] == .bool(true))
            #expect(sent.messages.count == 2)
            #expect(sent.messages[0].content == Prompt(task: schema.task, tone: nil, text: Self.sample).system)
        }
    }

    @Test("takes an answer out of its ```json fence")
    func fenced() async throws {
        try await GatewayHarness.with { harness in
            let response = try await harness.processJSON(text: Self.sample + " [mock:json=fenced]")
            #expect(response.status == 200)
            #expect(Self.string(try Self.json(response)["data"]) == #"{"summary":"\#(Self.content)"}"#)
            #expect(harness.mock.stats.requests == 1)
        }
    }

    @Test("repairs an answer that broke the schema with exactly one more call, and counts both calls' tokens")
    func repaired() async throws {
        try await GatewayHarness.with { harness in
            let response = try await harness.processJSON(text: Self.sample + " [mock:json=invalid-once]")
            #expect(response.status == 200)
            let body = try Self.json(response)
            #expect(Self.string(body["data"]) == #"{"summary":"\#(Self.content)"}"#)
            #expect(body["result"]?.stringValue == Self.content)
            #expect(harness.mock.stats.requests == 2)
            let repair = try #require(harness.lastUpstreamRequest)
            #expect(repair.messages.map(\.role) == [.system, .user, .assistant, .user])
            #expect(repair.messages[2].content == #"{"unexpected":"\#(Self.content)"}"#)
            #expect(
                repair.messages[3].content == TaskSchema.of(.summarize).repairMessage(.missingMember(path: "$.summary"))
            )
            #expect(
                String(decoding: harness.mock.lastRequestBody, as: UTF8.self).components(separatedBy: Self.sample).count
                    == 2)
            // The mock counts a fourth of the bytes of the messages (prompt) and of the answer.
            func tokens(_ messages: ArraySlice<ChatMessage>) -> Int {
                messages.reduce(0) { $0 + ($1.content?.utf8.count ?? 0) } / 4 + 1
            }
            let input = tokens(repair.messages.prefix(2)) + tokens(repair.messages[...])
            let output =
                (repair.messages[2].content?.utf8.count ?? 0) / 4 + 1 + (body["data"]?.jsonBytes().count ?? 0) / 4 + 1
            #expect(body["usage"]?["inputTokens"]?.intValue == input)
            #expect(body["usage"]?["outputTokens"]?.intValue == output)
            #expect(body["usage"]?["totalTokens"]?.intValue == input + output)
            #expect(harness.logs.lines.contains { $0.contains("invalid_model_output") && $0.contains("attempt=1") })
        }
    }

    @Test(
        "answers 502 invalid_model_output when the repaired answer still breaks the schema; logs why, not the answer"
    )
    func invalid() async throws {
        try await GatewayHarness.with { harness in
            let response = try await harness.processJSON(task: "key-points", text: Self.sample + " [mock:json=invalid]")
            #expect(response.status == 502)
            let body = try Body(response)
            #expect(body.code == "invalid_model_output")
            #expect(body.message == "پاسخ مدل با قالب خواسته‌شده سازگار نبود.")
            #expect(harness.mock.stats.requests == 2)
            await eventually("a line says status=502") { harness.logs.lines.contains { $0.contains("status=502") } }
            let reasons = harness.logs.lines.filter {
                $0.contains("invalid_model_output") && $0.contains("$.points: missing")
            }
            #expect(reasons.count == 2)
            #expect(!harness.logs.lines.contains { $0.contains(Self.content) || $0.contains(Self.sample) })
        }
    }

    @Test(
        "json_object asks for a JSON object and describes the shape; prompt only describes it",
        arguments: [StructuredMode.jsonObject, .prompt])
    func otherModes(mode: StructuredMode) async throws {
        try await GatewayHarness.with(configure: { $0.structuredMode = mode }) { harness in
            // The mock makes JSON only from a schema: here the answer is given.
            let response = try await harness.processJSON(text: Self.sample + #" [mock:content={"summary":" خلاصه "}]"#)
            #expect(response.status == 200)
            #expect(Self.string(try Self.json(response)["data"]) == #"{"summary":"خلاصه"}"#)
            let sent = try #require(harness.lastUpstreamRequest)
            #expect(sent.responseFormat == (mode == .jsonObject ? .object(["type": .string("json_object")]) : nil))
            #expect(
                sent.messages[0].content == Prompt(task: .summarize, tone: nil, text: Self.sample).system + "\n"
                    + TaskSchema.of(.summarize).shapeLine)
            #expect(
                String(decoding: harness.mock.lastRequestBody, as: UTF8.self).contains("response_format")
                    == (mode == .jsonObject))
        }
    }

    @Test("the cache keeps text and json answers apart, and a cached json answer keeps its data")
    func cache() async throws {
        try await GatewayHarness.with(configure: { $0.cacheTimeToLive = .seconds(60) }) { harness in
            let text = try await harness.process(task: "summarize", text: Self.sample)
            #expect(text.header("X-Cache") == "MISS")
            let json = try await harness.processJSON(text: Self.sample)
            #expect(json.header("X-Cache") == "MISS")
            let jsonAgain = try await harness.processJSON(text: Self.sample)
            #expect(jsonAgain.header("X-Cache") == "HIT")
            #expect(try Self.json(jsonAgain)["data"] == Self.json(json)["data"])
            #expect(try Self.json(jsonAgain)["data"] != nil)
            let textAgain = try await harness.process(task: "summarize", text: Self.sample)
            #expect(textAgain.header("X-Cache") == "HIT")
            #expect(try Self.json(textAgain)["data"] == nil)
            #expect(try Body(textAgain).result == Body(text).result)
            #expect(harness.mock.stats.requests == 2)
        }
    }

    @Test("streams the model's text as deltas, and done carries data and the human-readable result")
    func streamed() async throws {
        try await GatewayHarness.with { harness in
            let answer = try await harness.streamJSON(task: "key-points", text: Self.sample + " [mock:json=fenced]")
            #expect(answer.status == 200)
            #expect(answer.events.first?.event == "start")
            let deltas = answer.events.filter { $0.event == "delta" }.compactMap {
                try? JSONValue.parse(Array($0.data.utf8))["delta"]?.stringValue
            }
            #expect(deltas.joined() == "```json\n" + #"{"points":["\#(Self.content) 1"]}"# + "\n```")
            let done = try #require(answer.events.last)
            #expect(done.event == "done")
            let data = try JSONValue.parse(Array(done.data.utf8))
            #expect(Self.string(data["data"]) == #"{"points":["\#(Self.content) 1"]}"#)
            #expect(data["result"]?.stringValue == "- \(Self.content) 1")
            #expect(data["usage"]?["totalTokens"]?.intValue != nil)
            #expect(
                harness.lastUpstreamRequest?.responseFormat == TaskSchema.of(.keyPoints).responseFormat(.jsonSchema))
            #expect(harness.lastUpstreamRequest?.stream == true)
        }
    }

    @Test(
        "ends a stream whose answer breaks the schema with one error event invalid_model_output, without a repair call")
    func streamedInvalid() async throws {
        try await GatewayHarness.with { harness in
            let answer = try await harness.streamJSON(text: Self.sample + " [mock:json=invalid]")
            #expect(answer.status == 200)
            #expect(answer.events.filter { $0.event == "done" || $0.event == "error" }.count == 1)
            let terminal = try #require(answer.events.last)
            #expect(terminal.event == "error")
            let data = try JSONValue.parse(Array(terminal.data.utf8))
            #expect(data["code"] == .string("invalid_model_output"))
            #expect(data["status"]?.intValue == 502)
            #expect(harness.mock.stats.requests == 1)
        }
    }

    @Test("refuses an unknown format with 400 invalid_format, in Persian or in English")
    func invalidFormat() async throws {
        let body = "{\"task\":\"summarize\",\"text\":\(jsonString(Self.sample)),\"format\":\"xml\"}"
        try await GatewayHarness.with { harness in
            let response = try await harness.process(body)
            #expect(response.status == 400)
            let decoded = try Body(response)
            #expect(decoded.code == "invalid_format")
            #expect(decoded.message == "قالب پاسخ معتبر نیست." && decoded.reason == decoded.message)
            #expect(harness.mock.stats.requests == 0)
        }
        try await GatewayHarness.with(configure: { $0.errorLanguage = .english }) { harness async throws in
            #expect(try Body(try await harness.process(body)).message == "The response format is not valid.")
        }
    }

    @Test("without format, or with format text, the upstream body and the answer are what they were, byte for byte")
    func defaultUnchanged() async throws {
        try await GatewayHarness.with { harness in
            let prompt = Prompt(task: .rewrite, tone: .formal, text: Self.sample)
            let expected = ChatCompletionRequest(
                model: "test-model",
                messages: [
                    ChatMessage(role: .system, content: prompt.system), ChatMessage(role: .user, content: prompt.user),
                ],
                temperature: 0.2, maxTokens: 1200
            ).jsonBytes()
            for rest in ["", #","format":"text""#, #","format":null"#] {
                let response = try await harness.process(
                    "{\"task\":\"rewrite\",\"text\":\(jsonString(Self.sample)),\"tone\":\"formal\"" + rest + "}")
                #expect(response.status == 200)
                #expect(harness.mock.lastRequestBody == expected)
                let body = try Body(response)
                let usage = try #require(body.usage)
                let exact =
                    "{\"success\":true,\"result\":\(jsonString(Self.content)),"
                    + "\"requestId\":\"\(body.requestId ?? "")\",\"usage\":{\"inputTokens\":\(usage.inputTokens),"
                    + "\"outputTokens\":\(usage.outputTokens),\"totalTokens\":\(usage.totalTokens)}}"
                #expect(String(decoding: response.body, as: UTF8.self) == exact)
            }
        }
    }
}
