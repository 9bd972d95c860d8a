package import JSON

/// The JSON a task answers with when `"format": "json"` is asked for: its JSON Schema (strict:
/// every property required, no other property), the schema's name upstream, and how the
/// system prompt and the repair message describe the shape to a model that is not held to
/// the schema.
package struct TaskSchema: Sendable {
    let task: TextTask
    /// The one member the answer object has: `summary`, `text`, `points` or `titles`.
    let member: String
    /// The JSON Schema of the answer, as sent in `response_format.json_schema.schema`.
    let schema: JSONValue
    /// The system prompt's line in the `json_object` and `prompt` modes (fixed Persian text).
    package let shapeLine: String

    /// The schema of `task` (built once).
    package static func of(_ task: TextTask) -> TaskSchema {
        all[TextTask.allCases.firstIndex(of: task) ?? 0]
    }

    private static let all: [TaskSchema] = TextTask.allCases.map(make)

    /// `json_schema.name`: the task's name (OpenAI allows `[a-zA-Z0-9_-]{1,64}`).
    var name: String { task.rawValue }

    /// The `response_format` of a request in `mode`; nil in ``StructuredMode/prompt``.
    package func responseFormat(_ mode: StructuredMode) -> JSONValue? {
        switch mode {
        case .jsonSchema:
            return .object([
                "type": .string("json_schema"),
                "json_schema": .object(["name": .string(name), "strict": .bool(true), "schema": schema]),
            ])
        case .jsonObject:
            return .object(["type": .string("json_object")])
        case .prompt:
            return nil
        }
    }

    /// Whether the system prompt carries ``shapeLine`` in `mode`: only a model held to the
    /// schema by its provider needs no description of it.
    package static func describesShape(_ mode: StructuredMode) -> Bool {
        mode != .jsonSchema
    }

    private static func make(_ task: TextTask) -> TaskSchema {
        let string: JSONValue = .object(["type": .string("string")])
        func list(_ minimum: Int, _ maximum: Int) -> JSONValue {
            .object([
                "type": .string("array"), "items": string,
                "minItems": .number(Double(minimum)), "maxItems": .number(Double(maximum)),
            ])
        }
        let member: String
        let value: JSONValue
        let example: String
        switch task {
        case .summarize:
            (member, value, example) = ("summary", string, #"{"summary": "خلاصه"}"#)
        case .rewrite:
            (member, value, example) = ("text", string, #"{"text": "متن بازنویسی\#u{200C}شده"}"#)
        case .keyPoints:
            (member, value, example) = ("points", list(1, 20), #"{"points": ["نکته", "…"]}، با ۱ تا ۲۰ نکته"#)
        case .titles:
            (member, value, example) = ("titles", list(10, 10), #"{"titles": ["عنوان", "…"]}، با دقیقاً ۱۰ عنوان"#)
        }
        let schema: JSONValue = .object([
            "type": .string("object"),
            "properties": .object([member: value]),
            "required": .array([.string(member)]),
            "additionalProperties": .bool(false),
        ])
        return TaskSchema(task: task, member: member, schema: schema, shapeLine: shapePrefix + example + ".")
    }

    /// The user message of the repair call: what was wrong (briefly, in terms of the
    /// schema, never the answer's own words), then the shape asked for.
    package func repairMessage(_ violation: SchemaViolation) -> String {
        "پاسخ قبلی با قالب خواسته\u{200C}شده سازگار نبود: " + violation.persian + ".\n" + shapeLine
    }

    /// Before each task's example of the shape.
    static let shapePrefix = "پاسخ را فقط به\u{200C}صورت یک شیء JSON با این ساختار و بدون هیچ متن دیگری برگردان: "
}
