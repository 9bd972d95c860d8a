import ChatAPI
import Crypto
import JSON
import Redis
import Testing

@testable import Gateway
@testable import TextTasks

/// `"format": "json"` in the gateway without a server: the bodies sent upstream in each mode,
/// the mode's settings, and the format in the cache.
@Suite("Structured output (format json)")
struct StructuredOutputTests {
    static let text = "این متن بیست کاراکتر بیشتر دارد حتما"
    static let modes: [StructuredMode] = [.jsonSchema, .jsonObject, .prompt]

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
