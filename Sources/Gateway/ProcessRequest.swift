import ChatAPI

/// A validated `POST /api/process` body.
struct ProcessRequest: Equatable {
    static let minimumCharacters = 20
    static let maximumCharacters = 12_000

    let task: TextTask
    let tone: Tone?
    /// Trimmed of leading and trailing whitespace and newlines (``TextTrim``).
    let text: String
    /// Characters (grapheme clusters) of `text`.
    let characterCount: Int
    /// `"stream": true` was asked for.
    let stream: Bool

    /// Checks the content type, then the JSON shape, the task, the tone and the text length,
    /// in that order, and throws the first failure.
    static func parse(body: [UInt8], contentType: String?) throws(GatewayError) -> ProcessRequest {
        if let contentType, !isJSON(contentType) { throw .unsupportedMediaType }
        // The body must be an object with string `task` and `text`; `tone` may be absent or
        // null; unknown fields are ignored.
        guard let members = try? JSONValue.parseMembers(of: body, named: ["task", "text", "tone", "stream"]),
              let taskName = members[0]?.stringValue, let rawText = members[1]?.stringValue
        else { throw .invalidJSON }
        guard let task = TextTask(rawValue: taskName) else { throw .invalidTask }
        let tone: Tone?
        switch members[2] {
        case nil, .null?: tone = nil
        case .string(let value)?:
            guard let known = Tone(rawValue: value) else { throw .invalidTone }
            tone = known
        default: throw .invalidTone
        }
        let stream = members[3] == .bool(true)
        let text = TextTrim.trimmed(rawText)
        let count = CharacterCount.of(text, limit: maximumCharacters)
        if count < minimumCharacters { throw .textTooShort }
        if count > maximumCharacters { throw .textTooLong }
        return ProcessRequest(task: task, tone: tone, text: text, characterCount: count, stream: stream)
    }

    /// `application/json`, any case, with or without parameters.
    static func isJSON(_ contentType: String) -> Bool {
        // Bytes, not `==`: String equality is Unicode's canonical equivalence (see HeaderElement).
        if contentType.hasSameUTF8(as: "application/json") || contentType.hasSameUTF8(as: "application/json; charset=utf-8") {
            return true
        }
        return HeaderElement(Substring(contentType)).valueIs("application/json")
    }
}
