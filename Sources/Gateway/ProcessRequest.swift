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
        let count = CharacterCount.of(text, limit: maximumCharacters)
        if count < minimumCharacters { throw .textTooShort }
        if count > maximumCharacters { throw .textTooLong }
        return ProcessRequest(task: task, tone: tone, text: text, characterCount: count, stream: stream)
    }

    /// `application/json`, any case, with or without parameters.
    static func isJSON(_ contentType: String) -> Bool {
        if contentType == "application/json" || contentType == "application/json; charset=utf-8" { return true }
        return HeaderElement(Substring(contentType)).value == "application/json"
    }

    /// `text` without leading or trailing Unicode whitespace and newlines: whitespace
    /// `Character`s (grapheme clusters) off both ends.
    static func trimmed(_ text: String) -> String {
        if startsAndEndsVisibly(text) { return text }  // the usual case, decided from two bytes
        return trimmedByCharacters(withoutOuterWhitespaceRuns(text))
    }

    /// Whitespace `Character`s off both ends, found by walking `Character`s.
    static func trimmedByCharacters(_ text: String) -> String {
        guard let first = text.firstIndex(where: { !$0.isWhitespace }),
              let last = text.lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        if first == text.startIndex, text.index(after: last) == text.endIndex { return text }  // nothing to trim
        return String(text[first...last])
    }

    /// `text` with the runs of whitespace scalars at its ends cut down to their innermost
    /// scalar, by bytes: trimming it by `Character`s then gives what trimming `text` would,
    /// without walking a body's worth of whitespace one grapheme cluster at a time.
    ///
    /// A `Character` is whitespace when its first scalar is. Whitespace scalars (Unicode's
    /// White_Space: tab to CR, space, NEL, no-break spaces, the General Punctuation spaces,
    /// line and paragraph separators, ideographic space) have the grapheme break classes
    /// Control and Other, so no two of them share a cluster but CR LF, and nothing before one
    /// of them reaches past it (the emoji and regional-indicator rules look back over Extend
    /// and indicators only). In a run of them at an end, every scalar but the innermost is
    /// therefore a whitespace `Character`, or part of a CR LF one, and goes. The innermost is
    /// left to the `Character` walk: a combining mark after it (at the start) or a Prepend
    /// before it (at the end) shares its cluster.
    static func withoutOuterWhitespaceRuns(_ text: String) -> String {
        var text = text
        let (start, end) = text.withUTF8 { bytes -> (Int, Int) in
            var start = 0
            while let next = whitespaceScalarEnd(in: bytes, at: start), next < bytes.count, whitespaceScalarEnd(in: bytes, at: next) != nil {
                start = next
            }
            var end = bytes.count
            while let last = whitespaceScalarStart(in: bytes, endingAt: end), last > start,
                  whitespaceScalarStart(in: bytes, endingAt: last) != nil {
                end = last
            }
            return (start, end)
        }
        if start == 0, end == text.utf8.count { return text }
        let utf8 = text.utf8
        return String(Substring(utf8[utf8.index(utf8.startIndex, offsetBy: start)..<utf8.index(utf8.startIndex, offsetBy: end)]))
    }

    /// Where the scalar at `index` ends when it is a whitespace scalar; nil otherwise or at
    /// the end. `bytes` are valid UTF-8 and `index` is where a scalar starts.
    static func whitespaceScalarEnd(in bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Int? {
        guard index < bytes.count else { return nil }
        let lead = bytes[index]
        switch lead {
        case 0x09...0x0D, 0x20: return index + 1
        case 0xC2: return isWhitespace(0x80 | UInt32(bytes[index + 1] & 0x3F)) ? index + 2 : nil
        case 0xE1, 0xE2, 0xE3:
            let value = UInt32(lead & 0x0F) << 12 | UInt32(bytes[index + 1] & 0x3F) << 6 | UInt32(bytes[index + 2] & 0x3F)
            return isWhitespace(value) ? index + 3 : nil
        default: return nil
        }
    }

    /// Where the scalar ending at `end` starts when it is a whitespace scalar; nil otherwise
    /// or at the start. `bytes` are valid UTF-8 and `end` is where a scalar starts or the end.
    static func whitespaceScalarStart(in bytes: UnsafeBufferPointer<UInt8>, endingAt end: Int) -> Int? {
        // Whitespace scalars are one to three bytes long; step back over continuation bytes.
        var start = end - 1
        while start >= 0, end - start <= 3, bytes[start] & 0xC0 == 0x80 { start -= 1 }
        guard start >= 0, whitespaceScalarEnd(in: bytes, at: start) == end else { return nil }
        return start
    }

    /// Unicode's White_Space, the scalars `Character.isWhitespace` tests the first of.
    static func isWhitespace(_ value: UInt32) -> Bool {
        switch value {
        case 0x09...0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2000...0x200A, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000: return true
        default: return false
        }
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
