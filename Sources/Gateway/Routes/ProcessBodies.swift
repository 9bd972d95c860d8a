import ChatAPI
import JSON
import TextTasks

/// The upstream bodies of `/api/process`. Each is a pure function of the request and of the
/// upstream's model id and ``StructuredMode`` (``body(for:model:mode:)``), so a pool of
/// upstreams, each with a model and a mode of its own, asks for the body of each upstream it
/// tries. The configured model and mode of every task, tone and format have their body
/// encoded once (``ChatRequestBodyTemplate``), and a call escapes only the user's text.
struct ProcessBodies: Sendable {
    private struct Template: Sendable {
        let model: String
        let mode: StructuredMode
        let body: ChatRequestBodyTemplate
    }

    let maxTokens: Int
    /// By ``slot(task:tone:format:)``; nil for a task without a model.
    private let templates: [Template?]

    init(configuration: GatewayConfiguration) {
        maxTokens = configuration.maxTokens
        let mode = configuration.structuredMode
        templates = Prompt.combinations.flatMap { task, tone in
            OutputFormat.allCases.map { format -> Template? in
                guard let model = configuration.model(for: task),
                    let body = ChatRequestBodyTemplate(
                        Self.request(
                            task: task, tone: tone, text: ChatRequestBodyTemplate.placeholder, format: format,
                            model: model, mode: mode, maxTokens: configuration.maxTokens
                        ))
                else { return nil }
                return Template(model: model, mode: mode, body: body)
            }
        }
    }

    /// The most bytes the gateway adds around a text in an upstream body (the system prompt,
    /// the wrapping of the text, the JSON around them), and the most a structured answer's
    /// repair call adds on top of the first call's body and answer: what a budget's worst case
    /// counts beside the caller's own bytes.
    static func overheadBytes(configuration: GatewayConfiguration) -> (prompt: Int, repair: Int) {
        var prompt = 0
        var repair = 0
        for (task, tone) in Prompt.combinations {
            for format in OutputFormat.allCases {
                let body = request(
                    task: task, tone: tone, text: "", format: format, model: configuration.model(for: task) ?? "",
                    mode: configuration.structuredMode, maxTokens: configuration.maxTokens)
                prompt = max(prompt, body.jsonBytes().count)
            }
            // The repair's own message, with room for the longest finding it names.
            let message = TaskSchema.of(task).repairMessage(.notJSON)
            repair = max(repair, message.utf8.count + 512)
        }
        return (prompt, repair)
    }

    private static func slot(task: TextTask, tone: Tone?, format: OutputFormat) -> Int {
        Prompt.index(task: task, tone: tone) * OutputFormat.allCases.count + (format == .text ? 0 : 1)
    }

    /// The body asking `model`, in `mode` (read only for `"format": "json"`), for `request`'s
    /// answer: byte for byte `request(…).jsonBytes()`.
    func body(for request: ProcessRequest, model: String, mode: StructuredMode) -> [UInt8] {
        if let template = templates[Self.slot(task: request.task, tone: request.tone, format: request.format)],
            template.model == model, request.format == .text || template.mode == mode
        {
            return template.body.body(filling: Prompt.neutralizingTags(in: request.text))
        }
        return Self.request(for: request, model: model, mode: mode, maxTokens: maxTokens).jsonBytes()
    }

    /// ``body(for:model:mode:)`` of `request` as the function a pool calls per upstream.
    func bodies(for request: ProcessRequest) -> @Sendable (_ model: String, _ mode: StructuredMode) -> [UInt8] {
        { [self] model, mode in body(for: request, model: model, mode: mode) }
    }

    /// The repair call after `answer` broke the schema: the first call's messages, the
    /// answer as the assistant's, and a fixed user message saying what was wrong and asking
    /// for JSON only. The user's text is sent once, in the first user message, as before.
    func repairBody(
        for request: ProcessRequest, answer: String, violation: SchemaViolation, model: String, mode: StructuredMode
    ) -> [UInt8] {
        var repair = Self.request(for: request, model: model, mode: mode, maxTokens: maxTokens)
        repair.messages.append(ChatMessage(role: .assistant, content: answer))
        repair.messages.append(ChatMessage(role: .user, content: TaskSchema.of(request.task).repairMessage(violation)))
        return repair.jsonBytes()
    }

    /// The upstream request of `request` (a stream sets `stream` on it).
    static func request(for request: ProcessRequest, model: String, mode: StructuredMode, maxTokens: Int)
        -> ChatCompletionRequest
    {
        Self.request(
            task: request.task, tone: request.tone, text: request.text, format: request.format, model: model,
            mode: mode, maxTokens: maxTokens)
    }

    /// The task's system prompt (with the JSON shape's line when `mode` needs it), the text
    /// wrapped as data, the task's temperature, the token limit, and for JSON the
    /// `response_format` of `mode`.
    static func request(
        task: TextTask, tone: Tone?, text: String, format: OutputFormat, model: String, mode: StructuredMode,
        maxTokens: Int
    ) -> ChatCompletionRequest {
        let prompt = Prompt(task: task, tone: tone, text: text)
        var system = prompt.system
        var responseFormat: JSONValue?
        if format == .json {
            let schema = TaskSchema.of(task)
            if TaskSchema.describesShape(mode) { system += "\n" + schema.shapeLine }
            responseFormat = schema.responseFormat(mode)
        }
        return ChatCompletionRequest(
            model: model,
            messages: [ChatMessage(role: .system, content: system), ChatMessage(role: .user, content: prompt.user)],
            temperature: task.temperature,
            maxTokens: maxTokens,
            responseFormat: responseFormat
        )
    }
}
