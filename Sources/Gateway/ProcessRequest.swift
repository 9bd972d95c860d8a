import ChatAPI

/// A validated `POST /api/process` body.
struct ProcessRequest: Equatable {
    static let minimumCharacters = 20
    static let maximumCharacters = 12_000

    let task: TextTask
    let tone: Tone?
    /// Trimmed of leading and trailing whitespace and newlines.
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
        let text = trimmed(rawText)
        let count = CharacterCount.of(text)
        if count < minimumCharacters { throw .textTooShort }
        if count > maximumCharacters { throw .textTooLong }
        return ProcessRequest(task: task, tone: tone, text: text, characterCount: count, stream: stream)
    }

    /// `application/json`, any case, with or without parameters.
    static func isJSON(_ contentType: String) -> Bool {
        if contentType == "application/json" || contentType == "application/json; charset=utf-8" { return true }
        return HeaderElement(Substring(contentType)).value == "application/json"
    }

    /// `text` without leading or trailing Unicode whitespace and newlines.
    static func trimmed(_ text: String) -> String {
        if startsAndEndsVisibly(text) { return text }  // the usual case, decided from two bytes
        return trimmedByCharacters(text)
    }

    /// The definition: whitespace `Character`s (grapheme clusters) off both ends.
    static func trimmedByCharacters(_ text: String) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
              let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        if first == text.startIndex, text.index(after: last) == text.endIndex { return text }  // nothing to trim
        return String(text[first...last])
    }

    /// True when neither end of `text` can be a whitespace `Character`, judged from its
    /// bytes; false means "look closer", not "has whitespace".
    ///
    /// A `Character` is whitespace when its first scalar is. The first `Character` starts
    /// with the first scalar, so a visible ASCII byte (0x21–0x7E) or a lead byte of U+0100–
    /// U+07FF (0xC4–0xDF: Latin to Arabic and Thaana, no whitespace there) settles the start.
    /// The last `Character` ends with the last scalar; when that is visible ASCII, nothing
    /// before it can join its cluster but a Prepend scalar, and no Prepend is whitespace.
    static func startsAndEndsVisibly(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            guard let first = bytes.first, let last = bytes.last else { return false }
            return (0x21...0x7E ~= first || 0xC4...0xDF ~= first) && 0x21...0x7E ~= last
        }
    }
}
