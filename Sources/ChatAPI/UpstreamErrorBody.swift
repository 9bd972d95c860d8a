import JSON

/// The error body of an OpenAI-compatible server:
/// `{"error": {"message": "…", "type": "…", "code": "…", "param": "…"}}`.
///
/// Decoding is forgiving, because it runs on whatever a failing server sends:
/// - `code` and `param` may be a string, a number (kept as its decimal text) or `null`;
///   a value of any other type reads as `nil`, as does a non-string `message` or `type`;
/// - `error` may be a plain string or number (`{"error": "text"}`), which becomes
///   ``message``;
/// - the flat shape of vLLM and FastChat, `{"object": "error", "message": "…", "code": 400}`,
///   is read too.
///
/// Decoding fails only when the JSON is not an object with a non-null `error` (or
/// `"object": "error"`), so a chunk or a completion is never mistaken for an error.
/// Encoding writes the nested OpenAI shape with `null` for missing fields.
///
/// The texts come from the upstream and may hold internals: log them, never show them to a
/// client.
package struct UpstreamErrorBody: Codable, Hashable, Sendable {
    /// A human-readable description.
    package var message: String?
    /// The error class, e.g. `invalid_request_error`.
    package var type: String?
    /// A machine-readable code, e.g. `context_length_exceeded` or `"429"`.
    package var code: String?
    /// The request parameter at fault, if any.
    package var param: String?

    /// Creates an error body.
    package init(message: String?, type: String? = nil, code: String? = nil, param: String? = nil) {
        self.message = message
        self.type = type
        self.code = code
        self.param = param
    }

    /// Whether the server says the request does not fit the model's context window, as the
    /// servers a gateway meets say it: OpenAI's code `context_length_exceeded` (newer vLLM
    /// too), llama.cpp's type `exceed_context_size_error` (answered `400`, or `500` by some
    /// builds), and vLLM's message "This model's maximum context length is N tokens…" or "…is
    /// longer than the maximum model length of N".
    package var saysContextExceeded: Bool {
        if code == "context_length_exceeded" || type == "exceed_context_size_error" { return true }
        guard let message = message?.lowercased() else { return false }
        return message.contains("maximum context length") || message.contains("maximum model length")
    }

    /// Reads an error body from a response body; `nil` when the bytes are not one.
    /// Never throws.
    package static func decode(from bytes: [UInt8]) -> UpstreamErrorBody? {
        try? JSON.decode(UpstreamErrorBody.self, from: bytes)
    }

    private enum CodingKeys: String, CodingKey {
        case error
        case object
        case message
        case type
        case code
        case param
    }

    private enum DetailKeys: String, CodingKey {
        case message
        case type
        case code
        case param
    }

    package init(from decoder: any Decoder) throws {
        guard let body = UpstreamErrorBody(ifErrorIn: decoder) else {
            throw DecodingError.dataCorrupted(
                DecodingError.Context(codingPath: decoder.codingPath, debugDescription: "Not an error body.")
            )
        }
        self = body
    }

    /// Reads an error body, or returns `nil` (without building an error) when the value is
    /// not one; the stream decoder uses this to tell error events from chunks in one parse.
    init?(ifErrorIn decoder: any Decoder) {
        guard let container = try? decoder.container(keyedBy: CodingKeys.self) else {
            return nil
        }
        if container.contains(.error), (try? container.decodeNil(forKey: .error)) == false {
            if let detail = try? container.nestedContainer(keyedBy: DetailKeys.self, forKey: .error) {
                self.init(
                    message: Self.text(in: detail, forKey: .message),
                    type: Self.text(in: detail, forKey: .type),
                    code: Self.text(in: detail, forKey: .code),
                    param: Self.text(in: detail, forKey: .param)
                )
            } else {
                self.init(message: Self.text(in: container, forKey: .error))
            }
        } else if Self.text(in: container, forKey: .object) == "error" {
            self.init(
                message: Self.text(in: container, forKey: .message),
                type: Self.text(in: container, forKey: .type),
                code: Self.text(in: container, forKey: .code),
                param: Self.text(in: container, forKey: .param)
            )
        } else {
            return nil
        }
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        var detail = container.nestedContainer(keyedBy: DetailKeys.self, forKey: .error)
        try detail.encode(message, forKey: .message)
        try detail.encode(type, forKey: .type)
        try detail.encode(param, forKey: .param)
        try detail.encode(code, forKey: .code)
    }

    /// A string or number field as text; `nil` when absent, `null` or of another type.
    private static func text<Key: CodingKey>(in container: KeyedDecodingContainer<Key>, forKey key: Key) -> String? {
        if let string = try? container.decode(String.self, forKey: key) {
            return string
        }
        if let integer = try? container.decode(Int.self, forKey: key) {
            return String(integer)
        }
        if let number = try? container.decode(Double.self, forKey: key), number.isFinite {
            return String(number)
        }
        return nil
    }
}
