/// The answer to a non-streamed chat-completions request.
///
/// Every field is optional on decode and unknown fields are ignored, so a compatible server
/// that omits `id`, `usage` or `finish_reason`, or adds fields of its own, still decodes;
/// only JSON of the wrong shape fails. A missing or `null` `choices` decodes as `[]`.
/// Encoding omits `nil` fields and always writes `choices`.
public struct ChatCompletion: Codable, Hashable, Sendable {
    /// The completion id, e.g. `chatcmpl-…`.
    public var id: String?
    /// The object type, `chat.completion`.
    public var object: String?
    /// Creation time in Unix seconds.
    public var created: Int?
    /// The model that answered.
    public var model: String?
    /// The generated alternatives; normally one.
    public var choices: [Choice]
    /// Token counts, when the server reports them.
    public var usage: Usage?

    /// Creates a completion.
    public init(
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
    public var firstContent: String? {
        choices.first?.message?.content
    }

    /// One generated alternative.
    public struct Choice: Codable, Hashable, Sendable {
        /// The position of this choice among `choices`.
        public var index: Int?
        /// The generated message.
        public var message: Message?
        /// Why generation stopped: `stop`, `length`, `content_filter`, `tool_calls`, ….
        public var finishReason: String?

        /// Creates a choice.
        public init(index: Int? = 0, message: Message?, finishReason: String? = nil) {
            self.index = index
            self.message = message
            self.finishReason = finishReason
        }

        private enum CodingKeys: String, CodingKey {
            case index
            case message
            case finishReason = "finish_reason"
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.index = try container.decodeIfPresent(Int.self, forKey: .index)
            self.message = try container.decodeIfPresent(Message.self, forKey: .message)
            self.finishReason = try container.decodeIfPresent(String.self, forKey: .finishReason)
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(index, forKey: .index)
            try container.encodeIfPresent(message, forKey: .message)
            try container.encodeIfPresent(finishReason, forKey: .finishReason)
        }
    }

    /// The message of a choice. `content` is `nil` when the server sent `null` (a refusal
    /// or tool call) or nothing; an array of text parts is flattened as in ``ChatMessage``.
    public struct Message: Codable, Hashable, Sendable {
        /// Normally `assistant`.
        public var role: ChatRole?
        /// The generated text.
        public var content: String?

        /// Creates a message.
        public init(role: ChatRole? = .assistant, content: String?) {
            self.role = role
            self.content = content
        }

        private enum CodingKeys: String, CodingKey {
            case role
            case content
        }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.role = try container.decodeIfPresent(ChatRole.self, forKey: .role)
            self.content = try MessageContent.decode(from: container, forKey: .content)
        }

        public func encode(to encoder: any Encoder) throws {
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

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try container.decodeIfPresent(String.self, forKey: .id)
        self.object = try container.decodeIfPresent(String.self, forKey: .object)
        self.created = try container.decodeIfPresent(Int.self, forKey: .created)
        self.model = try container.decodeIfPresent(String.self, forKey: .model)
        self.choices = try container.decodeIfPresent([Choice].self, forKey: .choices) ?? []
        self.usage = try container.decodeIfPresent(Usage.self, forKey: .usage)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encodeIfPresent(id, forKey: .id)
        try container.encodeIfPresent(object, forKey: .object)
        try container.encodeIfPresent(created, forKey: .created)
        try container.encodeIfPresent(model, forKey: .model)
        try container.encode(choices, forKey: .choices)
        try container.encodeIfPresent(usage, forKey: .usage)
    }
}
