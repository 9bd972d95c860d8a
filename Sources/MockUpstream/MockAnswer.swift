import ChatAPI
import JSON

/// What the mock answers with — text, or a call of a tool the request offered — written in
/// OpenAI's shapes: a whole completion, or the chunks of a stream (delta shape for tool
/// calls: the call's id and name first, then its arguments, then `finish_reason`).
enum MockAnswer {
    case text(String)
    /// A call of `name` with arguments `{}`.
    case toolCall(name: String)

    static let id = "chatcmpl-mock"
    static let created = 1_700_000_000
    static let arguments = "{}"

    /// Made-up completion tokens of one choice.
    var tokens: Int {
        switch self {
        case .text(let content): content.utf8.count / 4 + 1
        case .toolCall(let name): (name.utf8.count + Self.arguments.utf8.count) / 4 + 1
        }
    }

    private var finishReason: String {
        switch self {
        case .text: "stop"
        case .toolCall: "tool_calls"
        }
    }

    private static func callID(_ index: Int) -> String { "call_mock_\(index)" }

    /// `chat.completion` with `choices` alike choices, index 0 to `choices - 1`.
    func completion(choices: Int, model: String, usage: Usage) -> [UInt8] {
        var writer = JSONWriter()
        writer.object { body in
            body.field("id", Self.id)
            body.field("object", "chat.completion")
            body.field("created", Self.created)
            body.field("model", model)
            body.field("choices", array: Array(0..<choices)) { choice, index in
                choice.field("index", index)
                choice.field("message") { message in
                    message.field("role", "assistant")
                    switch self {
                    case .text(let content):
                        message.field("content", content)
                    case .toolCall(let name):
                        message.nullField("content")
                        message.field("tool_calls", array: [index]) { call, index in
                            call.field("id", Self.callID(index))
                            call.field("type", "function")
                            call.field("function") {
                                $0.field("name", name)
                                $0.field("arguments", Self.arguments)
                            }
                        }
                    }
                }
                choice.field("finish_reason", finishReason)
            }
            Self.usageField(usage, &body)
        }
        return writer.bytes
    }

    /// What a stream sends between its first and last chunk: pieces of the text, or the
    /// call's arguments in one piece.
    func pieces(_ count: Int) -> [String] {
        switch self {
        case .text(let content): MockHandler.split(content, into: count)
        case .toolCall: [Self.arguments]
        }
    }

    /// The role (and, for a tool call, the call's id and name) of choice `index`.
    func firstChunk(index: Int, model: String) -> [UInt8] {
        Self.chunk(model: model, index: index, finishReason: nil) { delta in
            delta.field("role", "assistant")
            switch self {
            case .text:
                delta.field("content", "")
            case .toolCall(let name):
                delta.nullField("content")
                delta.field("tool_calls", array: [index]) { call, index in
                    call.field("index", 0)
                    call.field("id", Self.callID(index))
                    call.field("type", "function")
                    call.field("function") {
                        $0.field("name", name)
                        $0.field("arguments", "")
                    }
                }
            }
        }
    }

    /// One piece of choice `index`.
    func chunk(_ piece: String, index: Int, model: String) -> [UInt8] {
        Self.chunk(model: model, index: index, finishReason: nil) { delta in
            switch self {
            case .text:
                delta.field("content", piece)
            case .toolCall:
                delta.field("tool_calls", array: [0]) { call, callIndex in
                    call.field("index", callIndex)
                    call.field("function") { $0.field("arguments", piece) }
                }
            }
        }
    }

    /// The empty delta with choice `index`'s `finish_reason`.
    func lastChunk(index: Int, model: String) -> [UInt8] {
        Self.chunk(model: model, index: index, finishReason: finishReason) { _ in }
    }

    /// The usage-only chunk of `stream_options.include_usage`: `choices: []`.
    static func usageChunk(_ usage: Usage, model: String) -> [UInt8] {
        var writer = JSONWriter()
        writer.object { body in
            chunkHeader(model, &body)
            body.field("choices", array: [Int]()) { _, _ in }
            usageField(usage, &body)
        }
        return writer.bytes
    }

    private static func chunk(model: String, index: Int, finishReason: String?, delta: (inout JSONWriter) -> Void)
        -> [UInt8]
    {
        var writer = JSONWriter()
        writer.object { body in
            chunkHeader(model, &body)
            body.field("choices", array: [index]) { choice, index in
                choice.field("index", index)
                choice.field("delta", object: delta)
                choice.field("finish_reason", finishReason)
            }
        }
        return writer.bytes
    }

    private static func chunkHeader(_ model: String, _ body: inout JSONWriter) {
        body.field("id", id)
        body.field("object", "chat.completion.chunk")
        body.field("created", created)
        body.field("model", model)
    }

    private static func usageField(_ usage: Usage, _ body: inout JSONWriter) {
        body.field("usage") {
            $0.field("prompt_tokens", usage.promptTokens)
            $0.field("completion_tokens", usage.completionTokens)
            $0.field("total_tokens", usage.totalTokens)
        }
    }
}
