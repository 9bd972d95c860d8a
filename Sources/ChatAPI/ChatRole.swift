import JSON

/// The author of a chat message: `system`, `user`, `assistant`, or any other role a client
/// or server uses (kept verbatim, so new roles never fail decoding).
///
/// Encodes and decodes as a bare JSON string.
package struct ChatRole: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The role as it appears on the wire.
    package var rawValue: String

    /// Wraps a role name as it appears on the wire.
    package init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Wraps a role name written as a literal.
    package init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// Instructions from the operator (`system`).
    package static let system = ChatRole(rawValue: "system")
    /// Instructions from the operator in newer OpenAI models (`developer`).
    package static let developer = ChatRole(rawValue: "developer")
    /// The end user (`user`).
    package static let user = ChatRole(rawValue: "user")
    /// The model (`assistant`).
    package static let assistant = ChatRole(rawValue: "assistant")
    /// The result of a tool call (`tool`).
    package static let tool = ChatRole(rawValue: "tool")

    package var description: String { rawValue }

    package init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
