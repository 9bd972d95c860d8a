package import JSON

/// Why a `/v1/chat/completions` body cannot be passed through. Names the field, never its
/// value (it may be user text).
package enum ChatCompletionPassThroughError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The bytes are not an I-JSON document.
    case invalidJSON(JSONParseError)
    /// A JSON document, but not an object.
    case notAnObject
    /// A field the gateway reads is missing or of the wrong type: `model`, `messages`,
    /// `messages[2]`, `messages[2].role`, `stream`, `max_tokens`, ….
    case invalidField(String)
    /// `messages` holds no message, or more than the caller allows.
    case messageCount(Int)

    package var description: String {
        switch self {
        case .invalidJSON(let error): return error.description
        case .notAnObject: return "the body is not a JSON object"
        case .invalidField(let field): return "invalid or missing \(field)"
        case .messageCount(let count): return "\(count) messages"
        }
    }
}
