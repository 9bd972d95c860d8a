package import JSON

/// The body of `POST /chat/completions`, as OpenAI defines it (the subset this gateway uses).
///
/// Encoding writes OpenAI's snake_case keys and omits every `nil` field (never
/// `"temperature": null`). Decoding, for requests from OpenAI SDK clients, requires `model`
/// and `messages`, accepts every other field as absent or `null`, and ignores fields it
/// does not know (`tools`, `n`, `logprobs`, …).
package struct ChatCompletionRequest: Codable, Hashable, Sendable {
    /// The model id.
    package var model: String
    /// The conversation so far.
    package var messages: [ChatMessage]
    /// Sampling temperature, 0–2.
    package var temperature: Double?
    /// Nucleus sampling mass, `top_p`.
    package var topP: Double?
    /// The most tokens to generate, `max_tokens`.
    package var maxTokens: Int?
    /// The newer spelling of the token limit, `max_completion_tokens`; kept so that a client
    /// using it is not silently unlimited.
    package var maxCompletionTokens: Int?
    /// Whether the answer is streamed as server-sent events.
    package var stream: Bool?
    /// Options for a streamed answer, `stream_options`.
    package var streamOptions: StreamOptions?
    /// Up to four sequences where generation stops: a string or an array of strings.
    package var stop: Stop?
    /// `presence_penalty`, −2–2.
    package var presencePenalty: Double?
    /// `frequency_penalty`, −2–2.
    package var frequencyPenalty: Double?
    /// An end-user id for abuse monitoring.
    package var user: String?
    /// `response_format`: `{"type":"json_schema","json_schema":{…}}`, `{"type":"json_object"}`
    /// or `{"type":"text"}`, kept as the JSON it is.
    package var responseFormat: JSONValue?

    /// Creates a request; every optional field defaults to absent.
    package init(
        model: String,
        messages: [ChatMessage],
        temperature: Double? = nil,
        topP: Double? = nil,
        maxTokens: Int? = nil,
        maxCompletionTokens: Int? = nil,
        stream: Bool? = nil,
        streamOptions: StreamOptions? = nil,
        stop: Stop? = nil,
        presencePenalty: Double? = nil,
        frequencyPenalty: Double? = nil,
        user: String? = nil,
        responseFormat: JSONValue? = nil
    ) {
        self.model = model
        self.messages = messages
        self.temperature = temperature
        self.topP = topP
        self.maxTokens = maxTokens
        self.maxCompletionTokens = maxCompletionTokens
        self.stream = stream
        self.streamOptions = streamOptions
        self.stop = stop
        self.presencePenalty = presencePenalty
        self.frequencyPenalty = frequencyPenalty
        self.user = user
        self.responseFormat = responseFormat
    }

    /// `stream_options`: `{"include_usage": true}` asks for a final chunk with token usage.
    package struct StreamOptions: Codable, Hashable, Sendable {
        /// Whether the stream ends with a usage chunk (`include_usage`).
        package var includeUsage: Bool?

        /// Creates stream options.
        package init(includeUsage: Bool?) {
            self.includeUsage = includeUsage
        }

        private enum CodingKeys: String, CodingKey {
            case includeUsage = "include_usage"
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            self.includeUsage = try container.decodeIfPresent(Bool.self, forKey: .includeUsage)
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(includeUsage, forKey: .includeUsage)
        }
    }

    /// `stop`: one string or an array of strings, encoded back in the shape it came in.
    package enum Stop: Codable, Hashable, Sendable {
        /// `"stop": "…"`.
        case single(String)
        /// `"stop": ["…", "…"]`.
        case multiple([String])

        /// The stop sequences, whichever shape they came in.
        package var sequences: [String] {
            switch self {
            case .single(let sequence): [sequence]
            case .multiple(let sequences): sequences
            }
        }

        package init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if let sequence = try? container.decode(String.self) {
                self = .single(sequence)
            } else {
                self = .multiple(try container.decode([String].self))
            }
        }

        package func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            switch self {
            case .single(let sequence): try container.encode(sequence)
            case .multiple(let sequences): try container.encode(sequences)
            }
        }
    }

    private enum CodingKeys: String, CodingKey {
        case model
        case messages
        case temperature
        case topP = "top_p"
        case maxTokens = "max_tokens"
        case maxCompletionTokens = "max_completion_tokens"
        case stream
        case streamOptions = "stream_options"
        case stop
        case presencePenalty = "presence_penalty"
        case frequencyPenalty = "frequency_penalty"
        case user
        case responseFormat = "response_format"
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.model = try container.decode(String.self, forKey: .model)
        self.messages = try container.decode([ChatMessage].self, forKey: .messages)
        self.temperature = try container.decodeIfPresent(Double.self, forKey: .temperature)
        self.topP = try container.decodeIfPresent(Double.self, forKey: .topP)
        self.maxTokens = try container.decodeIfPresent(Int.self, forKey: .maxTokens)
        self.maxCompletionTokens = try container.decodeIfPresent(Int.self, forKey: .maxCompletionTokens)
        self.stream = try container.decodeIfPresent(Bool.self, forKey: .stream)
        self.streamOptions = try container.decodeIfPresent(StreamOptions.self, forKey: .streamOptions)
        self.stop = try container.decodeIfPresent(Stop.self, forKey: .stop)
        self.presencePenalty = try container.decodeIfPresent(Double.self, forKey: .presencePenalty)
        self.frequencyPenalty = try container.decodeIfPresent(Double.self, forKey: .frequencyPenalty)
        self.user = try container.decodeIfPresent(String.self, forKey: .user)
        self.responseFormat = try container.decodeIfPresent(JSONValue.self, forKey: .responseFormat)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(model, forKey: .model)
        try container.encode(messages, forKey: .messages)
        try container.encodeIfPresent(temperature, forKey: .temperature)
        try container.encodeIfPresent(topP, forKey: .topP)
        try container.encodeIfPresent(maxTokens, forKey: .maxTokens)
        try container.encodeIfPresent(maxCompletionTokens, forKey: .maxCompletionTokens)
        try container.encodeIfPresent(stream, forKey: .stream)
        try container.encodeIfPresent(streamOptions, forKey: .streamOptions)
        try container.encodeIfPresent(stop, forKey: .stop)
        try container.encodeIfPresent(presencePenalty, forKey: .presencePenalty)
        try container.encodeIfPresent(frequencyPenalty, forKey: .frequencyPenalty)
        try container.encodeIfPresent(user, forKey: .user)
        try container.encodeIfPresent(responseFormat, forKey: .responseFormat)
    }
}

/// `POST /v1/chat/completions` bodies come from clients.
extension ChatCompletionRequest: IJSONDecodable {}

extension ChatCompletionRequest {
    /// The request as OpenAI JSON, written directly (the hot path of every upstream call);
    /// the same document as `JSON.encode(self)`: snake_case keys, nil fields left out.
    package func jsonBytes() -> [UInt8] {
        var writer = JSONWriter(capacity: messages.reduce(256) { $0 + ($1.content?.utf8.count ?? 0) + 48 })
        writer.object { body in
            body.field("model", model)
            body.field("messages", array: messages) { message, item in
                message.field("role", item.role.rawValue)
                if let content = item.content { message.field("content", content) }
                if let name = item.name { message.field("name", name) }
            }
            if let temperature { body.field("temperature", temperature) }
            if let topP { body.field("top_p", topP) }
            if let maxTokens { body.field("max_tokens", maxTokens) }
            if let maxCompletionTokens { body.field("max_completion_tokens", maxCompletionTokens) }
            if let stream { body.field("stream", stream) }
            if let includeUsage = streamOptions?.includeUsage {
                body.field("stream_options") { $0.field("include_usage", includeUsage) }
            } else if streamOptions != nil {
                body.field("stream_options") { _ in }
            }
            switch stop {
            case .single(let value): body.field("stop", value)
            case .multiple(let values): body.field("stop", strings: values)
            case nil: break
            }
            if let presencePenalty { body.field("presence_penalty", presencePenalty) }
            if let frequencyPenalty { body.field("frequency_penalty", frequencyPenalty) }
            if let user { body.field("user", user) }
            if let responseFormat { body.field("response_format", responseFormat) }
        }
        return writer.bytes
    }
}
