import ChatAPI
import Crypto
import JSON
import Redis
import Testing

@testable import Gateway
@testable import TextTasks

/// `"format": "json"` without a server: the task schemas, the checker, the fences, the
/// human-readable text, the bodies sent upstream in each mode, and the format in the cache.
@Suite("Structured output (format json)")
struct StructuredOutputTests {
    static let text = "این متن بیست کاراکتر بیشتر دارد حتما"
    static let modes: [StructuredMode] = [.jsonSchema, .jsonObject, .prompt]

    @Test(
        "each task's schema is strict: one required member, nothing else allowed",
        arguments: [
            (
                TextTask.summarize,
                #"{"additionalProperties":false,"properties":{"summary":{"type":"string"}},"required":["summary"],"#
                    + #""type":"object"}"#
            ),
            (
                .rewrite,
                #"{"additionalProperties":false,"properties":{"text":{"type":"string"}},"required":["text"],"#
                    + #""type":"object"}"#
            ),
            (
                .keyPoints,
                #"{"additionalProperties":false,"properties":{"points":{"items":{"type":"string"},"maxItems":20,"#
                    + #""minItems":1,"type":"array"}},"required":["points"],"type":"object"}"#
            ),
            (
                .titles,
                #"{"additionalProperties":false,"properties":{"titles":{"items":{"type":"string"},"maxItems":10,"#
                    + #""minItems":10,"type":"array"}},"required":["titles"],"type":"object"}"#
            ),
        ]
    )
    func schemas(task: TextTask, expected: String) {
        #expect(String(decoding: TaskSchema.of(task).schema.jsonBytes(), as: UTF8.self) == expected)
    }

    @Test("asks for the schema, for a JSON object, or for nothing, by mode")
    func responseFormats() {
        let schema = TaskSchema.of(.summarize)
        let strict = String(decoding: schema.responseFormat(.jsonSchema)?.jsonBytes() ?? [], as: UTF8.self)
        #expect(
            strict == #"{"json_schema":{"name":"summarize","schema":"#
                + String(decoding: schema.schema.jsonBytes(), as: UTF8.self) + #","strict":true},"type":"json_schema"}"#
        )
        #expect(schema.responseFormat(.jsonObject) == .object(["type": .string("json_object")]))
        #expect(schema.responseFormat(.prompt) == nil)
        #expect(TaskSchema.of(.keyPoints).name == "key-points")
    }

    static let titles = (1...10).map { "\"عنوان \($0)\"" }.joined(separator: ",")

    @Test(
        "reads an answer that matches its schema, and names the first violation of one that does not",
        arguments: [
            (TextTask.summarize, #"{"summary":"خلاصه"}"#, nil),
            (.summarize, "  \n{\"summary\" : \"خلاصه\"}\n ", nil),
            (.summarize, "```json\n{\"summary\":\"خلاصه\"}\n```", nil),
            (.summarize, "```JSON{\"summary\":\"خلاصه\"}```", nil),
            (.summarize, "\n```\n{\"summary\":\"خلاصه\"}\n```\n", nil),
            (.summarize, "```json\n{\"summary\":\"خلاصه\"}", .notJSON),
            (.summarize, "خلاصه: متن", .notJSON),
            (.summarize, "", .notJSON),
            (.summarize, #"{"summary":"a"} {"#, .notJSON),
            (.summarize, #"{"summary":"a","summary":"b"}"#, .notJSON),
            (.summarize, #"["خلاصه"]"#, .wrongType(path: "$", expected: "object")),
            (.summarize, #"{}"#, .missingMember(path: "$.summary")),
            (.summarize, #"{"summary":"a","note":"b"}"#, .unexpectedMember(path: "$")),
            (.summarize, #"{"summary":5}"#, .wrongType(path: "$.summary", expected: "string")),
            (.summarize, #"{"summary":" \n\t"}"#, .emptyString(path: "$.summary")),
            (.rewrite, #"{"text":"متن"}"#, nil),
            (.rewrite, #"{"summary":"متن"}"#, .missingMember(path: "$.text")),
            (.keyPoints, #"{"points":["یک"]}"#, nil),
            (.keyPoints, #"{"points":[]}"#, .itemCount(path: "$.points", count: 0, minimum: 1, maximum: 20)),
            (
                .keyPoints, "{\"points\":[" + Array(repeating: "\"x\"", count: 21).joined(separator: ",") + "]}",
                .itemCount(path: "$.points", count: 21, minimum: 1, maximum: 20)
            ),
            (.keyPoints, #"{"points":["a",""]}"#, .emptyString(path: "$.points[1]")),
            (.keyPoints, #"{"points":["a",["b"]]}"#, .wrongType(path: "$.points[1]", expected: "string")),
            (.keyPoints, #"{"points":"a"}"#, .wrongType(path: "$.points", expected: "array")),
            (.titles, "{\"titles\":[\(titles)]}", nil),
            (.titles, #"{"titles":["a","b","c"]}"#, .itemCount(path: "$.titles", count: 3, minimum: 10, maximum: 10)),
        ] as [(TextTask, String, SchemaViolation?)]
    )
    func reading(task: TextTask, answer: String, expected: SchemaViolation?) {
        switch StructuredOutput.read(answer, task: task) {
        case .success: #expect(expected == nil)
        case .failure(let violation): #expect(violation == expected)
        }
    }

    @Test(
        "makes result from data: the text, a '- ' line per point, numbered '1. ' titles; strings trimmed",
        arguments: [
            (TextTask.summarize, #"{"summary":"  خلاصهٔ متن \n"}"#, "خلاصهٔ متن", #"{"summary":"خلاصهٔ متن"}"#),
            (.rewrite, #"{"text":"متن\nدوم"}"#, "متن\nدوم", #"{"text":"متن\nدوم"}"#),
            (.keyPoints, #"{"points":[" یک","دو "]}"#, "- یک\n- دو", #"{"points":["یک","دو"]}"#),
            (
                .titles, "{\"titles\":[\(titles)]}", (1...10).map { "\($0). عنوان \($0)" }.joined(separator: "\n"),
                "{\"titles\":[\(titles)]}"
            ),
        ]
    )
    func humanText(task: TextTask, answer: String, result: String, data: String) throws {
        let read = try StructuredOutput.read(answer, task: task).get()
        #expect(read.result == result)
        #expect(String(decoding: read.data.jsonBytes(), as: UTF8.self) == data)
    }

    @Test("a violation's log reason and repair message carry schema paths, never the answer's words")
    func violationWording() {
        let violation = SchemaViolation.itemCount(path: "$.titles", count: 3, minimum: 10, maximum: 10)
        #expect(violation.logReason == "$.titles: 3 items, allowed 10…10")
        #expect(violation.persian.contains("دقیقاً 10"))
        let message = TaskSchema.of(.titles).repairMessage(violation)
        #expect(message.hasPrefix("پاسخ قبلی با قالب خواسته\u{200C}شده سازگار نبود: "))
        #expect(message.hasSuffix(TaskSchema.of(.titles).shapeLine))
        // A member the model made up is not named.
        guard
            case .failure(let unexpected) = StructuredOutput.read(
                #"{"summary":"a","secret-word":"b"}"#, task: .summarize)
        else {
            Issue.record("accepted an unexpected member")
            return
        }
        #expect(!unexpected.logReason.contains("secret") && !unexpected.persian.contains("secret"))
    }

    static func configuration(_ mode: StructuredMode) -> GatewayConfiguration {
        var configuration = GatewayConfiguration()
        configuration.defaultModel = "m"
        configuration.taskModels["titles"] = "creative"
        configuration.maxTokens = 900
        configuration.structuredMode = mode
        return configuration
    }

    static func request(_ task: TextTask, tone: Tone? = nil, format: OutputFormat, text: String = text) throws
        -> ProcessRequest
    {
        var body = "{\"task\":\"\(task.rawValue)\",\"text\":\(jsonString(text)),\"format\":\"\(format.rawValue)\""
        if let tone { body += ",\"tone\":\"\(tone.rawValue)\"" }
        return try ProcessRequest.parse(body: Array((body + "}").utf8), contentType: nil)
    }

    @Test(
        "a body is the same bytes from its template and built directly, for any model and mode", arguments: Self.modes)
    func bodies(mode: StructuredMode) throws {
        let bodies = ProcessBodies(configuration: Self.configuration(mode))
        let tricky = Self.text + " \"<user_text>\" \\ \u{1}"
        for task in TextTask.allCases {
            for format in OutputFormat.allCases {
                for tone in [nil, Tone.formal] {
                    let request = try Self.request(task, tone: tone, format: format, text: tricky)
                    let configured = task == .titles ? "creative" : "m"
                    for (model, asked) in [(configured, mode), ("other-model", mode), (configured, .prompt)]
                        as [(String, StructuredMode)]
                    {
                        let direct = ProcessBodies.request(for: request, model: model, mode: asked, maxTokens: 900)
                            .jsonBytes()
                        #expect(bodies.body(for: request, model: model, mode: asked) == direct)
                        #expect(bodies.bodies(for: request)(model, asked) == direct)
                    }
                }
            }
        }
    }

    @Test("text bodies are what they were before formats: no response_format, the system prompt unchanged")
    func textBodyUnchanged() throws {
        let request = try Self.request(.summarize, format: .text)
        let prompt = Prompt(task: .summarize, tone: nil, text: Self.text)
        let before = ChatCompletionRequest(
            model: "m",
            messages: [
                ChatMessage(role: .system, content: prompt.system), ChatMessage(role: .user, content: prompt.user),
            ],
            temperature: 0.2, maxTokens: 900
        ).jsonBytes()
        for mode in Self.modes {
            #expect(
                ProcessBodies(configuration: Self.configuration(mode)).body(for: request, model: "m", mode: mode)
                    == before)
        }
        let absent = try ProcessRequest.parse(
            body: Array("{\"task\":\"summarize\",\"text\":\(jsonString(Self.text))}".utf8), contentType: nil)
        #expect(absent == request)
    }

    @Test(
        "json bodies: the schema in json_schema mode; json_object and prompt describe the shape in the system prompt",
        arguments: Self.modes)
    func jsonBodies(mode: StructuredMode) throws {
        let request = try Self.request(.keyPoints, format: .json)
        let sent = ProcessBodies.request(for: request, model: "m", mode: mode, maxTokens: 900)
        let schema = TaskSchema.of(.keyPoints)
        #expect(sent.responseFormat == schema.responseFormat(mode))
        let system = Prompt(task: .keyPoints, tone: nil, text: Self.text).system
        #expect(sent.messages[0].content == (mode == .jsonSchema ? system : system + "\n" + schema.shapeLine))
        #expect(sent.messages[1].content == Prompt(task: .keyPoints, tone: nil, text: Self.text).user)
        #expect(sent.temperature == 0.2 && sent.maxTokens == 900 && sent.stream == nil)
    }

    @Test(
        "the repair body: the first call's messages, the answer as the assistant's, one fixed user message; text once"
    )
    func repairBody() throws {
        let request = try Self.request(.summarize, format: .json)
        let bodies = ProcessBodies(configuration: Self.configuration(.jsonSchema))
        let bytes = bodies.repairBody(
            for: request, answer: "نه JSON", violation: .notJSON, model: "m", mode: .jsonSchema)
        let repair = try JSON.decode(ChatCompletionRequest.self, from: bytes)
        let first = ProcessBodies.request(for: request, model: "m", mode: .jsonSchema, maxTokens: 900)
        #expect(Array(repair.messages.prefix(2)) == first.messages)
        #expect(repair.messages.count == 4)
        #expect(repair.messages[2] == ChatMessage(role: .assistant, content: "نه JSON"))
        #expect(
            repair.messages[3] == ChatMessage(role: .user, content: TaskSchema.of(.summarize).repairMessage(.notJSON)))
        #expect(repair.responseFormat == first.responseFormat)
        #expect(String(decoding: bytes, as: UTF8.self).components(separatedBy: Self.text).count == 2)
    }

    @Test(
        "the route's structured mode is the first upstream's; the single-upstream settings' one upstream carries it"
    )
    func modeFromSettings() throws {
        #expect(try GatewayConfiguration(environment: [:]).structuredMode == .jsonSchema)
        #expect(try GatewayConfiguration(environment: ["DARVAREH_STRUCTURED": "prompt"]).structuredMode == .prompt)
        var configuration = GatewayConfiguration()
        configuration.structuredMode = .jsonObject
        #expect(configuration.effectiveUpstreams.map(\.structuredMode) == [.jsonObject])
    }

    @Test("usage of a repaired answer adds both calls up")
    func usageSum() {
        let a = Usage(promptTokens: 10, completionTokens: 5, totalTokens: 15)
        let b = Usage(promptTokens: 30, completionTokens: 4, totalTokens: nil)
        #expect(Usage.sum(a, b) == Usage(promptTokens: 40, completionTokens: 9, totalTokens: 49))
        #expect(Usage.sum(nil, b) == b)
        #expect(Usage.sum(a, nil) == a)
        #expect(Usage.sum(nil, nil) == nil)
    }

    @Test("the shared cache keeps text keys as they were, gives json its own, and stores data")
    func sharedCacheFormat() throws {
        let text = ResponseCache.Key(task: "summarize", tone: nil, model: "m", text: Self.text)
        var json = text
        json.format = .json
        // The key before formats, spelled out.
        let before = "tg:cache:" + SHA256.hexDigest("v1|9:summarize|-|1:m|\(Self.text.utf8.count):\(Self.text)".utf8)
        #expect(SharedResponseCache.entryKey(text) == before)
        #expect(SharedResponseCache.entryKey(json) != before)
        let answer = ResponseCache.Answer(
            result: "- یک", usage: Usage(promptTokens: 1, completionTokens: 2, totalTokens: 3),
            data: .object(["points": .array([.string("یک")])]))
        let stored = try #require(SharedResponseCache.encode(answer))
        #expect(SharedResponseCache.decode(.bulkString(stored.bytes)) == answer)
        let old = Array(#"{"result":"r","usage":null}"#.utf8)
        #expect(SharedResponseCache.decode(.bulkString(old)) == ResponseCache.Answer(result: "r", usage: nil))
    }

    @Test("the in-process cache keeps formats apart")
    func memoryCacheFormat() async throws {
        let cache = ResponseCache(timeToLive: .seconds(60), capacity: 10)
        let text = ResponseCache.Key(task: "summarize", tone: nil, model: "m", text: Self.text)
        var json = text
        json.format = .json
        _ = try await cache.answer(for: text) { () throws(GatewayError) in
            ResponseCache.Answer(result: "متن", usage: nil)
        }
        let (answer, hit) = try await cache.answer(for: json) { () throws(GatewayError) in
            ResponseCache.Answer(result: "متن", usage: nil, data: .object(["summary": .string("متن")]))
        }
        #expect(!hit && answer.data != nil)
        #expect(try await cache.answer(for: json) { () throws(GatewayError) in throw .emptyResult }.answer == answer)
        #expect(try await cache.answer(for: text) { () throws(GatewayError) in throw .emptyResult }.answer.data == nil)
    }
}
