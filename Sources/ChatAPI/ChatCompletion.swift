import JSON

/// The answer to a non-streamed chat-completions request.
///
/// Read with ``init(jsonBytes:)``. Every field is optional and unknown fields are ignored, so a compatible server
/// that omits `id`, `usage` or `finish_reason`, or adds fields of its own, still decodes;
/// only JSON of the wrong shape fails. A missing or `null` `choices` decodes as `[]`.
/// Encoding omits `nil` fields and always writes `choices`.
package struct ChatCompletion: Encodable, Hashable, Sendable {
    /// The completion id, e.g. `chatcmpl-…`.
    package var id: String?
    /// The object type, `chat.completion`.
    package var object: String?
    /// Creation time in Unix seconds.
    package var created: Int?
    /// The model that answered.
    package var model: String?
    /// The generated alternatives; normally one.
    package var choices: [Choice]
    /// Token counts, when the server reports them.
    package var usage: Usage?

    /// Creates a completion.
    package init(
        id: String? = nil,
        object: String? = "chat.completion",
        created: Int? = nil,
        model: String? = nil,
        choices: [Choice],
        usage: Usage? = nil
    ) {
        self.id = id
        self.object = object
        self.created = created
        self.model = model
        self.choices = choices
        self.usage = usage
    }

    /// The text of the first choice, `choices[0].message.content`, if there is one.
    package var firstContent: String? {
        choices.first?.message?.content
    }

    /// One generated alternative.
    package struct Choice: Encodable, Hashable, Sendable {
        /// The position of this choice among `choices`.
        package var index: Int?
        /// The generated message.
        package var message: Message?
        /// Why generation stopped: `stop`, `length`, `content_filter`, `tool_calls`, ….
        package var finishReason: String?

        /// Creates a choice.
        package init(index: Int? = 0, message: Message?, finishReason: String? = nil) {
            self.index = index
            self.message = message
            self.finishReason = finishReason
        }

        private enum CodingKeys: String, CodingKey {
            case index
            case message
            case finishReason = "finish_reason"
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(index, forKey: .index)
            try container.encodeIfPresent(message, forKey: .message)
            try container.encodeIfPresent(finishReason, forKey: .finishReason)
        }
    }

    /// The message of a choice. `content` is `nil` when the server sent `null` (a refusal
    /// or tool call) or nothing; an array of text parts is flattened as in ``ChatMessage``.
    package struct Message: Encodable, Hashable, Sendable {
        /// Normally `assistant`.
        package var role: ChatRole?
        /// The generated text.
        package var content: String?

        /// Creates a message.
        package init(role: ChatRole? = .assistant, content: String?) {
            self.role = role
            self.content = content
        }

        private enum CodingKeys: String, CodingKey {
            case role
            case content
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(role, forKey: .role)
            try container.encodeIfPresent(content, forKey: .content)
        }
    }

    private enum CodingKeys: String, CodingKey {
        case id
        case object
        case created
        case model
        case choices
        case usage
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encodeIfPresent(object, forKey: .object)
        try container.encodeIfPresent(created, forKey: .created)
        try container.encodeIfPresent(model, forKey: .model)
        try container.encode(choices, forKey: .choices)
        try container.encodeIfPresent(usage, forKey: .usage)
    }
}
