import ChatAPI
import JSON

/// What the mock reads of a chat-completion request. Read from a ``JSONValue`` rather than
/// decoded as a ``ChatCompletionRequest``, which refuses image parts and drops `tools` and
/// `n`: the mock must take every body a real provider takes.
struct MockRequest {
    var model: String
    var stream: Bool
    var includeUsage: Bool
    /// `n`: how many choices to answer with.
    var choiceCount: Int
    /// The function the answer calls: `tool_choice`'s when it names one, else the first of
    /// `tools`; nil without tools or with `tool_choice: "none"`.
    var toolName: String?
    /// The text of the last user message (where directives are), its text parts joined.
    var lastUserText: String?
    /// UTF-8 bytes of all the messages' text, for a made-up prompt token count.
    var textBytes: Int
    /// `response_format` as sent.
    var responseFormat: JSONValue?
    /// The text of every user message, in order.
    var userTexts: [String]
    /// Whether the conversation has an assistant message (a repair call does).
    var hasAssistantMessage: Bool

    /// Nil unless `body` is a JSON object with a string `model` and an array `messages`.
    init?(_ body: [UInt8]) {
        guard let document = try? JSONValue.parse(body, maximumDepth: 512),
            let model = document["model"]?.stringValue,
            case .array(let messages)? = document["messages"]
        else { return nil }
        self.model = model
        stream = document["stream"] == .bool(true)
        includeUsage = document["stream_options"]?["include_usage"] == .bool(true)
        choiceCount = max(1, min(128, document["n"]?.intValue ?? 1))
        if case .array(let tools)? = document["tools"], !tools.isEmpty, document["tool_choice"]?.stringValue != "none" {
            toolName =
                document["tool_choice"]?["function"]?["name"]?.stringValue ?? tools[0]["function"]?["name"]?.stringValue
                ?? "tool"
        }
        let texts = messages.map { Self.text(of: $0["content"]) }
        textBytes = texts.reduce(0) { $0 + ($1?.utf8.count ?? 0) }
        lastUserText = messages.indices.last { messages[$0]["role"]?.stringValue == "user" }.flatMap { texts[$0] }
        responseFormat = document["response_format"]
        userTexts = messages.indices.compactMap { messages[$0]["role"]?.stringValue == "user" ? texts[$0] : nil }
        hasAssistantMessage = messages.contains { $0["role"]?.stringValue == "assistant" }
    }

    /// A string content, or the text parts of an array joined with "\n"; nil for others.
    private static func text(of content: JSONValue?) -> String? {
        switch content {
        case .string(let text)?: return text
        case .array(let parts)?:
            let texts = parts.compactMap { $0["type"]?.stringValue == "text" ? $0["text"]?.stringValue : nil }
            return texts.isEmpty ? nil : texts.joined(separator: "\n")
        default: return nil
        }
    }
}
