import JSON
import Testing

@testable import TextTasks

/// `"format": "json"`'s rules without a server: the task schemas, the checker, the fences and
/// the human-readable text.
@Suite("Structured output: the task schemas and their check")
struct StructuredOutputTests {
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
}
