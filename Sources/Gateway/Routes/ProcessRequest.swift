import JSON
import TextTasks

#if canImport(Glibc)
    import Glibc
#endif

/// A validated `POST /api/process` body.
struct ProcessRequest: Equatable {
    static let minimumCharacters = TextLimits.minimumCharacters
    static let maximumCharacters = TextLimits.maximumCharacters

    let task: TextTask
    let tone: Tone?
    /// Trimmed of leading and trailing whitespace and newlines (``TextTrim``).
    let text: String
    /// Characters (grapheme clusters) of `text`.
    let characterCount: Int
    /// `"stream": true` was asked for.
    let stream: Bool
    /// `format`: absent or null is ``OutputFormat/text``.
    var format = OutputFormat.text

    /// Checks the content type, then the JSON shape, the task, the tone, the format and the text length,
    /// in that order, and throws the first failure.
    static func parse(body: [UInt8], contentType: String?, maximumCharacters: Int = ProcessRequest.maximumCharacters)
        throws(GatewayError) -> ProcessRequest
    {
        if let contentType, !isJSON(contentType) { throw .unsupportedMediaType }
        // The shape: an I-JSON object (no repeated name, no lone surrogate) with string `task`
        // and `text`, `tone` and `format` a string or null, `stream` a bool or null, each maybe absent;
        // unknown fields are ignored. A wrong type is never read as a default.
        guard let members = try? JSONValue.parseMembers(of: body, named: ["task", "text", "tone", "stream", "format"]),
            let taskName = members[0]?.stringValue, let rawText = members[1]?.stringValue
        else { throw .invalidJSON }
        let toneName: String?
        switch members[2] {
        case nil, .null?: toneName = nil
        case .string(let value)?: toneName = value
        default: throw .invalidJSON
        }
        let stream: Bool
        switch members[3] {
        case nil, .null?: stream = false
        case .bool(let value)?: stream = value
        default: throw .invalidJSON
        }
        let formatName: String?
        switch members[4] {
        case nil, .null?: formatName = nil
        case .string(let value)?: formatName = value
        default: throw .invalidJSON
        }
        // U+0000 is no text a person typed (only an escape can carry it), and C strings
        // downstream would end at it.
        if containsNUL(rawText) { throw .invalidJSON }

        guard let task = TextTask(rawValue: taskName) else { throw .invalidTask }
        let tone: Tone?
        if let toneName {
            guard let known = Tone(rawValue: toneName) else { throw .invalidTone }
            tone = known
        } else {
            tone = nil
        }
        let format: OutputFormat
        if let formatName {
            guard let known = OutputFormat(rawValue: formatName) else { throw .invalidFormat }
            format = known
        } else {
            format = .text
        }
        let text = TextTrim.trimmed(rawText)
        let count = CharacterCount.of(text, limit: maximumCharacters)
        if count < minimumCharacters { throw .textTooShort }
        if count > maximumCharacters { throw .textTooLong }
        return ProcessRequest(task: task, tone: tone, text: text, characterCount: count, stream: stream, format: format)
    }

    private static func containsNUL(_ text: String) -> Bool {
        text.utf8.withContiguousStorageIfAvailable { bytes in
            guard let start = bytes.baseAddress else { return false }
            return memchr(start, 0, bytes.count) != nil
        } ?? text.utf8.contains(0)
    }

    /// `application/json`, any case, with or without parameters.
    static func isJSON(_ contentType: String) -> Bool {
        // Bytes, not `==`: String equality is Unicode's canonical equivalence (see HeaderElement).
        if contentType.hasSameUTF8(as: "application/json")
            || contentType.hasSameUTF8(as: "application/json; charset=utf-8")
        {
            return true
        }
        return HeaderElement(Substring(contentType)).valueIs("application/json")
    }
}
