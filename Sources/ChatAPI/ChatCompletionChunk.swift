import JSON

/// One chunk of a streamed chat completion: the JSON in each `data:` event of the stream.
///
/// Decoding is as tolerant as ``ChatCompletion``'s: every field is optional, unknown fields
/// are ignored, a missing `choices` decodes as `[]` and a missing `delta` as an empty one.
/// With `stream_options.include_usage` the last chunk before `[DONE]` has `choices: []` and
/// carries ``usage``. Encoding omits `nil` fields except `finish_reason`, which is written
/// as `null` as OpenAI does.
package struct ChatCompletionChunk: Codable, Hashable, Sendable {
    /// The completion id, the same in every chunk of a stream.
    package var id: String?
    /// The object type, `chat.completion.chunk`.
    package var object: String?
    /// Creation time in Unix seconds.
    package var created: Int?
    /// The model that answers.
    package var model: String?
    /// The increments of each alternative; empty in the usage chunk.
    package var choices: [Choice]
    /// Token counts, in the final chunk when usage was asked for.
    package var usage: Usage?

    /// Creates a chunk.
    package init(
        id: String? = nil,
        object: String? = "chat.completion.chunk",
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

    /// The text this chunk adds to the first choice, if any.
    package var firstDeltaContent: String? {
        choices.first?.delta.content
    }

    /// Whether the chunk adds to the answer of any choice: text or a tool call (a chunk with
    /// only a role, a finish reason or usage does not).
    package var carriesOutput: Bool {
        choices.contains { !($0.delta.content ?? "").isEmpty || $0.delta.hasToolCalls }
    }

    /// The increment of one alternative.
    package struct Choice: Codable, Hashable, Sendable {
        /// The position of the alternative among `choices`.
        package var index: Int?
        /// What this chunk adds.
        package var delta: Delta
        /// Set in the alternative's last chunk: `stop`, `length`, ….
        package var finishReason: String?

        /// Creates a choice increment.
        package init(index: Int? = 0, delta: Delta, finishReason: String? = nil) {
            self.index = index
            self.delta = delta
            self.finishReason = finishReason
        }

        private enum CodingKeys: String, CodingKey {
            case index
            case delta
            case finishReason = "finish_reason"
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.index = try container.decodeIfPresent(Int.self, forKey: .index)
            self.delta = try container.decodeIfPresent(Delta.self, forKey: .delta) ?? Delta()
            self.finishReason = try container.decodeIfPresent(String.self, forKey: .finishReason)
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(index, forKey: .index)
            try container.encode(delta, forKey: .delta)
            if let finishReason {
                try container.encode(finishReason, forKey: .finishReason)
            } else {
                try container.encodeNil(forKey: .finishReason)
            }
        }
    }

    /// The part of a message one chunk adds: the role in the first chunk, then text.
    package struct Delta: Codable, Hashable, Sendable {
        /// Set in the first chunk, normally `assistant`.
        package var role: ChatRole?
        /// The text added; flattened like ``ChatMessage/content`` if sent as parts.
        package var content: String?
        /// Whether the chunk carries `tool_calls` (not null). Read only, never encoded: the
        /// gateway relays the calls as they came and only needs to know the stream is alive.
        package var hasToolCalls: Bool

        /// Creates a delta.
        package init(role: ChatRole? = nil, content: String? = nil, hasToolCalls: Bool = false) {
            self.role = role
            self.content = content
            self.hasToolCalls = hasToolCalls
        }

        private enum CodingKeys: String, CodingKey {
            case role
            case content
            case toolCalls = "tool_calls"
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.role = try container.decodeIfPresent(ChatRole.self, forKey: .role)
            self.content = try MessageContent.decode(from: container, forKey: .content)
            self.hasToolCalls = try container.contains(.toolCalls) && !container.decodeNil(forKey: .toolCalls)
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

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.id = try container.decodeIfPresent(String.self, forKey: .id)
        self.object = try container.decodeIfPresent(String.self, forKey: .object)
        self.created = try container.decodeIfPresent(Int.self, forKey: .created)
        self.model = try container.decodeIfPresent(String.self, forKey: .model)
        self.choices = try container.decodeIfPresent([Choice].self, forKey: .choices) ?? []
        self.usage = try container.decodeIfPresent(Usage.self, forKey: .usage)
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
