/// One message of a chat-completions request: `{"role": "user", "content": "…"}`.
///
/// Decoding accepts `content` as a string, `null` or an array of text parts (flattened to
/// one string, see ``ChatMessage/content``); unknown fields such as `tool_calls` are ignored.
/// Encoding always writes `content` as a string and omits `nil` fields.
package struct ChatMessage: Codable, Hashable, Sendable {
    /// Who wrote the message.
    package var role: ChatRole
    /// The message text; `nil` when the client sent `null` or no `content`.
    ///
    /// An array of text parts is decoded as their texts joined with `"\n"`; a part that is
    /// not text fails decoding.
    package var content: String?
    /// An optional participant name.
    package var name: String?

    /// Creates a message.
    package init(role: ChatRole, content: String?, name: String? = nil) {
        self.role = role
        self.content = content
        self.name = name
    }

    private enum CodingKeys: String, CodingKey {
        case role
        case content
        case name
    }

    package init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.role = try container.decode(ChatRole.self, forKey: .role)
        self.content = try MessageContent.decode(from: container, forKey: .content)
        self.name = try container.decodeIfPresent(String.self, forKey: .name)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(role, forKey: .role)
        try container.encodeIfPresent(content, forKey: .content)
        try container.encodeIfPresent(name, forKey: .name)
    }
}
