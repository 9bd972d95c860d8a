import JSON

/// The JSON body of a chat-completion request whose last message ends the same way every time
/// but for one piece of text: the bytes before and after that text, encoded once by
/// ``ChatCompletionRequest/jsonBytes()``, so that each call escapes only its own text rather
/// than the whole conversation (a task's system prompt is most of the body).
package struct ChatRequestBodyTemplate: Sendable {
    /// Stands for the text in the request the template is made from. The writer escapes it as
    /// `\u0000`, so it is found among the body's escapes, where no other text can look like it.
    package static let placeholder = "\u{0}"
    private static let escapedPlaceholder = Array(#"\u0000"#.utf8)

    private let head: [UInt8]
    private let tail: [UInt8]

    /// The template of `request`, whose strings hold ``placeholder`` once in all; nil when
    /// they hold it more than once or not at all.
    package init?(_ request: ChatCompletionRequest) {
        let bytes = request.jsonBytes()
        let marker = Self.escapedPlaceholder
        var found: Int?
        var index = 0
        // Every backslash in the body starts an escape (a quote or backslash of the text is
        // written `\"` or `\\`): step over each whole, so `\\u0000` (the text's own
        // backslash, then "u0000") is not taken for the placeholder.
        while index < bytes.count {
            guard bytes[index] == 0x5C else {
                index += 1
                continue
            }
            if index + marker.count <= bytes.count, bytes[index..<(index + marker.count)].elementsEqual(marker) {
                guard found == nil else { return nil }
                found = index
            }
            index += 2
        }
        guard let found else { return nil }
        head = Array(bytes[..<found])
        tail = Array(bytes[(found + marker.count)...])
    }

    /// The body with `text` where the placeholder was: byte for byte what `jsonBytes()` gives
    /// for the request with `text` in its place.
    package func body(filling text: String) -> [UInt8] {
        var body: [UInt8] = []
        body.reserveCapacity(head.count + text.utf8.count + text.utf8.count / 8 + tail.count)
        body.append(contentsOf: head)
        JSONWriter.appendStringContents(of: text, to: &body)
        body.append(contentsOf: tail)
        return body
    }
}
