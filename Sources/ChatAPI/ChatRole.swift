import JSON

/// The author of a chat message: `system`, `user`, `assistant`, or any other role a client
/// or server uses (kept verbatim, so new roles never fail decoding).
///
/// Encodes and decodes as a bare JSON string.
public struct ChatRole: RawRepresentable, Hashable, Sendable, Codable, ExpressibleByStringLiteral,
    CustomStringConvertible
{
    /// The role as it appears on the wire.
    public var rawValue: String

    /// Wraps a role name as it appears on the wire.
    public init(rawValue: String) {
        self.rawValue = rawValue
    }

    /// Wraps a role name written as a literal.
    public init(stringLiteral value: String) {
        self.rawValue = value
    }

    /// Instructions from the operator (`system`).
    public static let system = ChatRole(rawValue: "system")
    /// Instructions from the operator in newer OpenAI models (`developer`).
    public static let developer = ChatRole(rawValue: "developer")
    /// The end user (`user`).
    public static let user = ChatRole(rawValue: "user")
    /// The model (`assistant`).
    public static let assistant = ChatRole(rawValue: "assistant")
    /// The result of a tool call (`tool`).
    public static let tool = ChatRole(rawValue: "tool")

    public var description: String { rawValue }

    public init(from decoder: any Decoder) throws {
        self.rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
